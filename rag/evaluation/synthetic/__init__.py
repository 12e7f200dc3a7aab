"""Query sets made from the documents: rewritten sentences, or an LLM's questions.

sets  make_queries, SyntheticSet              sentences  the sentences worth asking about
rewrite  a sentence rewritten as a question    llm  an LLM's questions about a passage
"""
