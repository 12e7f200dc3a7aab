"""Query sets made from the documents: rewritten sentences, or an LLM's questions.

sets  make_queries, SyntheticSet              sentences  the sentences worth asking about
rewrite  a sentence rewritten as a question    llm  an LLM's questions about a passage
"""

from __future__ import annotations

from rag.evaluation.synthetic.sets import DEFAULT_COUNT, SENTENCE_BIAS, SyntheticSet, make_queries

__all__ = ["DEFAULT_COUNT", "SENTENCE_BIAS", "SyntheticSet", "make_queries"]
