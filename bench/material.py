"""Real German material for the benchmarks: Debian's texlive-lang-german manuals, fetched once into bench/out."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
SHARED = ROOT.parent / "shared" / "data"
# German manuals of texlive-lang-german (English ones and one-page forms left out)
GERMAN_MANUALS = ("l2kurz.pdf", "l2tabu.pdf", "biblatex-de-Benutzerhandbuch.pdf", "lualatex-doc-DE.pdf",
                  "csquotes-DE.pdf", "microtype-DE.pdf", "etoolbox-DE.pdf", "enumitem-de.pdf", "schulmathematik.pdf",
                  "dtk-bibliography.pdf", "l2picfaq.pdf", "germkorr.pdf", "booktabs-de.pdf", "ngermanb.pdf",
                  "de-bibleref-german.pdf", "udesoftec-doc.pdf", "milog.pdf", "dhua.pdf")


def texlive_german() -> Path:
    """Return the folder with texlive-lang-german's files (apt-get download + dpkg -x, once)."""
    folder = OUT / "texlive-lang-german"
    if folder.is_dir():
        return folder
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(["apt-get", "download", "texlive-lang-german"], cwd=work, check=True, capture_output=True)
        deb = next(Path(work).glob("*.deb"))
        folder.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg", "-x", str(deb), str(folder)], check=True)
    return folder


def german_pdfs(names: tuple[str, ...] = GERMAN_MANUALS) -> list[Path]:
    """Return the German manuals found (in the order of names), fetching the package when needed."""
    found = {p.name: p for p in texlive_german().rglob("*.pdf")}
    return [found[name] for name in names if name in found]


def german_markdown() -> list[Path]:
    return sorted((SHARED / "markdown").glob("*.md"))
