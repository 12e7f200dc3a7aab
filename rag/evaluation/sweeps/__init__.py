"""Sweeps: grids of chunkings x search modes run over one query set, and what they give.

sweep  run_sweep, the grid and its inputs      sweep_collections  the collection of each chunking, reused
results  a sweep's rows and their standing   ahead  embedding the next chunking while this one searches
rerank_effect  rows with rerank on against off   sweep_funnel  the funnels of a sweep's rows
fusion_tuning  the hybrid weight, cross-validated   sweep_grid  the grid and its parsing
"""
