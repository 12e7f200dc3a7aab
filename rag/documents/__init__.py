"""Stage 1, extract: a file's bytes -> Document (pages of clean text, headings, notes).

model     Page, Heading, Document            text      decoding and cleaning of text (linear patterns)
pdf       pdfium, pypdf as fallback        headings  Markdown `#`, numbered lines; outline: PDF bookmarks
loader    load_document, SourceFile, limits  samples   the sample files of a folder
pypdf_text  the pypdf fallback             ligatures pdfium's glyph codes named from pypdf's text
"""

from rag.documents.loader import SourceFile, check_size, load_document
from rag.documents.model import PAGE_SEPARATOR, Document, Heading, Page

__all__ = ["PAGE_SEPARATOR", "Document", "Heading", "Page", "SourceFile", "check_size", "load_document"]
