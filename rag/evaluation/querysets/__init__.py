"""Query sets: the questions, their labels and judgments, their versions, the kept uploads, the SQuAD importer.

queries  query sets (JSONL/CSV) and their labels   judgments  grades and how metrics read them
versions  content hashes, counts, diffs             kept_sets  uploads kept under the data root
squad  SQuAD/XQuAD JSON -> documents and a query set   kept_documents  uploaded documents kept under the data root
saving  one writer at a time (a file lock), whole files, no leftovers of killed writers
"""
