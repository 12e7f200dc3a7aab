"""Why was it missed? Each question's relevant chunks through every stage of retrieval (the diagnosis).

stages  a question's funnel, lost_at, misses per stage   rankings  where each chunk ranked at each stage
"""
