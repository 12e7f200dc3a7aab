"""Stage 1, extract: a file's bytes -> Document (pages of clean text, headings, notes).

model       Page, Heading, Document            text       decoding and cleaning of text (linear patterns)
pdf         pdfium: pages, outline, passwords  headings   Markdown `#`, numbered lines; outline: PDF bookmarks
pypdf_text  pypdf, pdfium's fallback           ligatures  glyph codes pdfium left, named by the fonts
loader      load_document, SourceFile, limits  samples    the sample files of a folder
"""

from rag.documents.loader import SourceFile, check_size, load_document
from rag.documents.model import PAGE_SEPARATOR, Document, Heading, Page

__all__ = ["PAGE_SEPARATOR", "Document", "Heading", "Page", "SourceFile", "check_size", "load_document"]
