"""The command line: python -m rag COMMAND ... (see `python -m rag --help`)."""

from rag.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
