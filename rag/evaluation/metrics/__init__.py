"""What an evaluation measures, and how sure it is: metrics per question, intervals, the paired test, modes.

metrics  span-judged hit, recall, precision, MRR, nDCG   intervals  bootstrap intervals of a metric
paired  the paired sign-flip test of two runs             modes  the search modes a metric is taken in
"""
