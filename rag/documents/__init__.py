"""Stage 1, extract: a file's bytes -> Document (pages of clean text, headings, notes).

model       Page, Heading, Document            text       decoding and cleaning of text (linear patterns)
pdf         pdfium: pages, outline, passwords  headings   Markdown `#`, numbered lines; outline: PDF bookmarks
pypdf_text  pypdf, pdfium's fallback           ligatures  glyph codes pdfium left, named by the fonts
loader      load_document, SourceFile, limits  samples    the sample files of a folder
expansion   RAG_MAX_CHARS, counted while read  bounded    a PDF read in a child of bounded memory and time
language    detect_language: German, English or neither
boxes       Box: where a span of a PDF's text is on its pages (one rectangle per line fragment), span_boxes
textmap     clean text that keeps, per character, where in pdfium's text it came from
pdf_clean   a PDF page's raw text -> clean text (ligatures, hyphenation, blanks), mapped or not
render      a page drawn as PNG with boxes marked (the chunk, its matched child, an answer or evidence)
"""

from __future__ import annotations

from rag.documents.boxes import Box, boxes_from_payload
from rag.documents.language import detect_language
from rag.documents.loader import (
    KINDS_BY_SUFFIX,
    SourceFile,
    check_size,
    expected_size,
    load_document,
    read_file,
    span_boxes,
)
from rag.documents.model import PAGE_SEPARATOR, Document, Heading, Page
from rag.documents.pdf import read_pdf
from rag.documents.pdf_clean import clean_pdf_text
from rag.documents.render import (
    CHUNK,
    COLOUR_NAMES,
    MATCH,
    Mark,
    page_count,
    place_spans,
    render_page,
    stack_pngs,
    unlocked_copy,
)
from rag.documents.samples import BUNDLED, SAMPLE_SUFFIXES, sample_files, sample_paths
from rag.documents.text import clean_plain_text

__all__ = ["BUNDLED", "Box", "CHUNK", "COLOUR_NAMES", "Document", "Heading", "KINDS_BY_SUFFIX", "MATCH", "Mark",
           "PAGE_SEPARATOR", "Page", "SAMPLE_SUFFIXES", "SourceFile", "boxes_from_payload", "check_size",
           "clean_pdf_text", "clean_plain_text", "detect_language", "expected_size", "load_document", "page_count",
           "place_spans", "read_file", "read_pdf", "render_page", "sample_files", "sample_paths", "span_boxes",
           "stack_pngs", "unlocked_copy"]
