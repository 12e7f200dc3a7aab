"""Contextual chunk headers: the text a chunk is embedded and keyword-indexed as, when its collection says so.

With chunk headers on, a chunk is indexed as its document's title and heading path, a blank line, then its
text:

    Southern California
    Economy > Tourism

    <the chunk's text>

The title is the document's title without its file extension ("R-FAQ.pdf" -> "R-FAQ"); a first heading that
repeats the title is left out; a document without headings (plain text, XQuAD's articles) gets the title
line alone. Only the embedder and BM25 see the header: the stored `content` (and so the LLM context, the
pages and every offset) stays the chunk's own text. A collection records the setting (metadata
"chunk_headers", like its prompts), so later ingests and sweeps into it index chunks the same way; a
collection without the record is indexed as before (off).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from rag.errors import InvalidSettingsError

META_KEY = "chunk_headers"  # in the collection's RAG Lab metadata: True / False
DEFAULT_CHUNK_HEADERS = False  # measured: bench/headers.py, docs/benchmarks.md "Contextual chunk headers"
CHOICES = ("on", "off")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}$")


def parse_chunk_headers(text: str) -> bool:
    """Return True for "on", False for "off"; InvalidSettingsError naming the choices otherwise."""
    value = text.strip().lower()
    if value not in CHOICES:
        raise InvalidSettingsError(f"Chunk headers must be 'on' or 'off', not {text!r}.")
    return value == "on"


def header(title: str, heading_path: Sequence[str]) -> str:
    """Return a chunk's header: the document title, then its heading path joined by " > " (if any)."""
    name = _EXTENSION.sub("", title.strip()) if os.path.splitext(title)[1] else title.strip()
    path = [h.strip() for h in heading_path if h.strip()]
    if path and path[0].casefold() == name.casefold():
        path = path[1:]
    return "\n".join(line for line in (name, " > ".join(path)) if line)


def indexed_text(content: str, title: str, heading_path: Sequence[str], on: bool) -> str:
    """Return the text a chunk is embedded and keyword-indexed as: content, with its header before it when on."""
    if not on:
        return content
    top = header(title, heading_path)
    return f"{top}\n\n{content}" if top else content
