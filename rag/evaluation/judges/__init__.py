"""Judging hits: grades written into the query set, an LLM as judge, and how far it agrees with the analyst.

judging  judgments written into a query set file   llm_judge  an LLM grades hits
agreement  the LLM judge against the analyst (kappa)
merging  which file keeps a user's judgments; an older file merged into it
"""
