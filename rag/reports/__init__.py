"""What the pages and the CLI show about chunks and hits, computed without any UI.

chunks   statistics, flags, overlaps, the heading tree of a document's chunks
hits     scores per source, the score threshold, neighbours of a hit
scores   score distributions over a collection, and where each query's answer ranked
embedding_map  a 2-D map of a collection's chunk embeddings with a query and its hits
text     text on one line for a table cell (preview)
evaluation_html  a sweep or an evaluation as one self-contained HTML page (charts: svg)
"""
