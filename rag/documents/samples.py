"""Sample documents on disk: the PDF, Markdown and text files of a folder, ready to ingest.

BUNDLED is the small set shipped inside the package (rag/samples: German and English, a query set with answer
spans, CC0): the app offers it unless RAG_SAMPLE_DIR names another folder.
"""

from __future__ import annotations

from pathlib import Path

from rag.documents.loader import SourceFile

BUNDLED = Path(__file__).resolve().parents[1] / "samples"  # package data (pyproject: tool.setuptools.package-data)
SAMPLE_SUFFIXES = (".pdf", ".md", ".txt")
SKIPPED_SAMPLES = ("LICENSE", "README")  # file names starting with these describe the folder, not content


def sample_paths(folder: str | Path) -> list[Path]:
    """Return the PDF, Markdown and text files under folder (recursively; LICENSE and README skipped), by path."""
    return sorted(
        p for p in Path(folder).rglob("*")
        if p.is_file() and p.suffix.lower() in SAMPLE_SUFFIXES and not p.name.upper().startswith(SKIPPED_SAMPLES)
    )


def sample_files(folder: str | Path) -> list[SourceFile]:
    """Return the sample files under folder, ready to ingest (each read when the ingest reaches it)."""
    return [SourceFile(p.name, path=p) for p in sample_paths(folder)]
