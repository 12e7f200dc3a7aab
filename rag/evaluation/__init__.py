"""Measuring retrieval: which chunk_size, overlap, top_k and search mode find the answers, in numbers.

queries  query sets (JSONL/CSV) and their labels     metrics  span-judged hit, recall, precision, MRR, nDCG
modes    search modes as a dimension                 sweep    grids of chunkings x modes; results: its rows
compare  A/B of two collections or modes             fusion_tuning  the hybrid weight, cross-validated
squad    SQuAD/XQuAD JSON -> documents and a query set
funnel   why a question was missed: its chunks' rank at every stage (rankings), lost_at, misses per stage
synthetic  query sets made from the documents: rewritten sentences (sentences, rewrite) or an LLM's questions
"""
