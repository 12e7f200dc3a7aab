"""Two evaluations side by side: an A/B of two collections or modes, and the regression gate against a kept run.

compare  A/B of one query, or of a query set, under two settings   gate  worse than the baseline? JUnit XML
"""
