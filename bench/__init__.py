"""Benchmarks: each prints its figures next to a reference measured in the same run. Run from the project
root as modules, e.g. `python -m bench.chunking` (the package `rag` is installed with `pip install -e .`)."""
