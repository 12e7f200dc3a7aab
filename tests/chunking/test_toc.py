"""rag.chunking.toc: the one-pass table-of-contents flags equal today's line-by-line rule on every chunk and span.

REFERENCE_* below is the rule as it was (rag/chunking/toc.py before toc_flags), copied verbatim: the flags of
the new code are compared with it on the shared PDFs and Markdown, on spans cut anywhere in them, and on
generated text made of what entries are made of (numbers, dot leaders, anchor links, long lines, odd digits).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.chunking import toc
from rag.chunking.chunker import TOC, chunk_document
from rag.documents.loader import load_document
from rag.documents.model import Document, Heading, Page

# ---- today's rule, verbatim ------------------------------------------------------------------------------
REFERENCE_MIN_ENTRIES = 3
REFERENCE_MIN_SHARE = 0.6
REFERENCE_MAX_LINE = 200
_REFERENCE_LEADER = re.compile(
    r"(?:\.[ \t]?){3,}[ \t]*\d{1,4}[ \t]*$|…+[ \t]*\d{1,4}[ \t]*$|(?:[ \t]\.){3,}[ \t]*\d{1,4}$"
)
_REFERENCE_NUMBERED = re.compile(
    r"[ \t]*(?:\d{1,2}(?:\.\d{1,2}){0,4}\.?|[IVXLC]{1,6}\.|[A-Z]\.)[ \t]+\S.{0,150}?[ \t]\d{1,4}[ \t]*"
)
_REFERENCE_ANCHOR_LINK = re.compile(r"[ \t]*(?:[-*+]|\d{1,3}\.)[ \t]+\[[^\]\n]{1,150}\]\(#[^)\s]{1,150}\)[ \t]*")


def reference_is_entry(line: str) -> bool:
    if len(line) > REFERENCE_MAX_LINE or not line.strip():
        return False
    return bool(
        _REFERENCE_LEADER.search(line) or _REFERENCE_NUMBERED.fullmatch(line) or _REFERENCE_ANCHOR_LINK.fullmatch(line)
    )


def reference_is_table_of_contents(text: str) -> bool:
    lines = [line for line in text.split("\n") if line.strip()]
    entries = sum(reference_is_entry(line) for line in lines)
    return entries >= REFERENCE_MIN_ENTRIES and entries >= REFERENCE_MIN_SHARE * len(lines)


# ---- real documents --------------------------------------------------------------------------------------
REAL = ["pdfs/hausarbeit-jura.pdf", "pdfs/pdflatex-outline.pdf", "pdfs/Seige_of_Vicksburg_Sample_OCR.pdf",
        "pdfs/crazyones.pdf", "pdfs/multipage.pdf", "pdfs/encryption__r6-empty-password.pdf",
        "markdown/asvs-de-V2-Authentication.md", "markdown/asvs-de-Using-ASVS.md",
        "markdown/LICENSE-ASVS.md"]  # fmt: skip
SETTINGS = [(350, 50), (512, 64), (100, 20), (30, 5)]  # the defaults, the old 512/64, and small chunks cut lines


def real_document(shared_data, relative: str) -> Document:
    path = shared_data / relative
    return load_document(path.read_bytes(), path.name)


@pytest.mark.parametrize("relative", REAL)
def test_chunk_flags_of_real_documents_are_todays(shared_data, relative):
    document = real_document(shared_data, relative)
    for chunk_size, overlap in SETTINGS:
        for strategy in ("structure", "tokens"):
            chunks = chunk_document(document, chunk_size, overlap, strategy)
            assert [TOC in c.flags for c in chunks] == [reference_is_table_of_contents(c.content) for c in chunks]


def test_real_documents_hold_tables_of_contents(shared_data):
    """The comparison above means something: the shared material has chunks that are tables of contents."""
    document = real_document(shared_data, "pdfs/pdflatex-outline.pdf")
    assert any(TOC in c.flags for c in chunk_document(document, 350, 50))
    assert any(TOC in c.flags for c in chunk_document(document, 30, 5, "tokens"))


def line_spans(text: str) -> list[tuple[int, int]]:
    """Return spans of 1-12 lines from every line start, whole and with their first or last word cut off."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    ends = [m.start() for m in re.finditer("\n", text)] + [len(text)]
    spans = []
    for i, start in enumerate(starts):
        for end in ends[i : i + 12]:
            inner_start = text.find(" ", start, end) + 1 or start  # the first line cut after its first word
            inner_end = text.rfind(" ", start, end)  # the last line cut before its last word
            spans += [(start, end), (inner_start, end), (start, inner_end), (inner_start, inner_end)]
    return [(a, b) for a, b in spans if a < b]


@pytest.mark.parametrize("relative", ["pdfs/hausarbeit-jura.pdf", "pdfs/pdflatex-outline.pdf",
                                      "markdown/asvs-de-Using-ASVS.md"])  # fmt: skip
def test_flags_of_spans_cut_anywhere_in_real_documents_are_todays(shared_data, relative):
    text = real_document(shared_data, relative).text
    spans = line_spans(text)
    expected = [reference_is_table_of_contents(text[a:b]) for a, b in spans]
    assert toc.toc_flags(text, spans) == expected
    if relative.startswith("pdfs/"):
        assert sum(expected) >= 10  # their tables of contents are in there, also cut at either end


@pytest.mark.parametrize("relative", REAL)
def test_entries_of_real_lines_are_todays(shared_data, relative):
    lines = real_document(shared_data, relative).text.split("\n")
    assert [toc.is_entry(line) for line in lines] == [reference_is_entry(line) for line in lines]


def test_a_line_cut_by_the_chunk_start_is_judged_as_cut():
    """Only the cut end of "Siehe Anhang 1. Allgemeines 5" is an entry; the whole line is not."""
    lines = ["Siehe dazu Anhang 1. Allgemeines 5", "2. Methoden 7", "3. Ergebnisse 9", "Fazit", "Anhang"]
    text = "\n".join(lines)
    start = text.index("1. Allgemeines")
    assert not reference_is_entry(lines[0]) and reference_is_entry(text[start : text.index("\n")])
    spans = [(0, len(text)), (start, len(text)), (start, text.index("\nFazit"))]
    assert toc.toc_flags(text, spans) == [False, True, True]
    assert [reference_is_table_of_contents(text[a:b]) for a, b in spans] == [False, True, True]


def test_a_line_cut_by_the_chunk_end_is_judged_as_cut():
    """Only the cut start of "3. Ergebnisse 9 und dann der Text" is an entry; the whole line is not."""
    lines = ["1. Allgemeines 5", "2. Methoden 7", "3. Ergebnisse 9 und dann der Text"]
    text = "\n".join(lines)
    end = text.index(" und")
    assert not reference_is_entry(lines[2]) and reference_is_entry(lines[2][: lines[2].index(" und")])
    assert toc.toc_flags(text, [(0, len(text)), (0, end)]) == [False, True]
    assert [reference_is_table_of_contents(text[:b]) for b in (len(text), end)] == [False, True]


@pytest.mark.parametrize("trail", ["", " ", "\t", " \t", "\xa0", "\r", ")", " (neu)"])
@pytest.mark.parametrize("page", ["5", "305", "\u0663", "\uff15"])
def test_entries_ending_in_spaces_tabs_and_other_digits_are_todays(trail, page):
    for line in ["1. Einleitung " + page, "Einleitung ..... " + page, "Einleitung … " + page, f"- [Teil {page}](#t)"]:
        text = "\n".join([line + trail] * 3 + ["Fazit"])
        spans = [(0, len(text)), (0, text.rindex("\n")), (1, len(text)), (2, text.rindex("\n") - 1)]
        assert toc.toc_flags(text, spans) == [reference_is_table_of_contents(text[a:b]) for a, b in spans]


# ---- generated text --------------------------------------------------------------------------------------
PIECES = st.sampled_from(
    ["1.", "2.1", "12.3.4.5.6", "1", "42", "1234", "12345", "IV.", "A.", "a.", "Einleitung", "Methoden", "Anhang",
     "Über", "ß", " ", " ", " ", "\t", "  ", ".", "..", "...", ". . .", " . . .", ".\t.\t.", "…", "……", "- ", "* ",
     "+ ", "[Ziel](#ziel)", "[a b](#a-b)", "[x](#)", "](#", "(", ")", "[", "]", "#", "\u0663", "\u0967\u0968",
     "\uff15", "\xa0", "\r", "\u2028", "\x85", "x" * 150, "lang " * 30]
)
DIGITS = st.sampled_from(["1", "9", "42", "305", "1234", "12345", "\u0663", "\u0967\u0968", "\uff15", "4\u0663"])
SPACES = st.sampled_from(["", " ", " ", "  ", "\t", " \t", "\xa0"])


@st.composite
def entry_lines(draw) -> str:
    """A line built like an entry: numbered, with dot leaders or as an anchor link, perhaps spoilt at either end."""
    number = draw(st.sampled_from(["", "1.", "2.1", "2.1.3", "12.3.4.5.6", "IV.", "A.", "a.", "1", "123."]))
    title = draw(st.sampled_from(["Einleitung", "Über die Methoden", "x", "Anhang 3", "a . b", "(Teil 2)"]))
    title += "w" * draw(st.sampled_from([0, 0, 0, 150, 180 - len(title), 186 - len(title), 190 - len(title)]))
    kind = draw(st.sampled_from(["numbered", "leader", "anchor"]))
    if kind == "anchor":
        bullet = draw(st.sampled_from(["- ", "* ", "+ ", "1. ", "-", "- \t", "1234. "]))
        anchor = draw(st.sampled_from(["ziel", "a-b", "", "a b", "x)"]))
        line = f"{bullet}[{title}](#{anchor})"
    else:
        leader = draw(st.sampled_from([" ", " ", "...", " ... ", ". . . ", " . . .", ".\t.\t.", ". ..", "…", "……",
                                       " … ", ".. ", "\t"]))  # fmt: skip
        line = f"{number}{draw(SPACES)}{title}{leader}{draw(SPACES)}{draw(DIGITS)}"
    return draw(SPACES) + line + draw(SPACES) + draw(st.sampled_from(["", "", "", " weiter", " 5", ")", "\r", "."]))


LINES = entry_lines() | entry_lines() | st.lists(PIECES, max_size=12).map("".join) | st.just("")


@st.composite
def toc_texts(draw) -> str:
    """Text of lines made of table-of-contents pieces: entries, near misses, blank and over-long lines."""
    lines = draw(st.lists(LINES, max_size=30))
    trail = draw(SPACES)  # one text's lines often end alike (a tab before every page number's line break)
    return "".join(line + trail + draw(st.sampled_from(["\n", "\n", "\n\n", " \n"])) for line in lines) + draw(LINES)


@st.composite
def texts_and_spans(draw) -> tuple[str, list[tuple[int, int]]]:
    """Text and spans that start and end anywhere, at line ends and at spaces (where chunks start and end)."""
    text = draw(toc_texts())
    if not text:
        return text, []
    cuts = {0, len(text)} | {m.start() for m in re.finditer(r"\s", text)} | {m.end() for m in re.finditer(r"\s", text)}
    at = st.integers(0, len(text)) | st.sampled_from(sorted(cuts))
    spans = [tuple(sorted(pair)) for pair in draw(st.lists(st.tuples(at, at), max_size=40))]
    return text, [(a, b) for a, b in spans if a < b]


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts_and_spans())
def test_flags_of_any_span_of_generated_text_are_todays(text_and_spans):
    text, spans = text_and_spans
    assert toc.toc_flags(text, spans) == [reference_is_table_of_contents(text[a:b]) for a, b in spans]


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(LINES | st.text(max_size=60))
def test_entries_of_generated_lines_are_todays(line):
    line = line.replace("\n", " ")
    assert toc.is_entry(line) == reference_is_entry(line)


@pytest.mark.parametrize("length", range(195, 206))
def test_entries_at_the_longest_line_are_todays(length):
    """Dot leaders have no length limit of their own: MAX_LINE decides."""
    for line in ["Einleitung ..... 5", "Einleitung .\t.\t. 5", "Einleitung … \u0663", "Einleitung . . .\uff15"]:
        padded = line[:3] + "w" * (length - len(line)) + line[3:]
        text = "\n".join([padded] * 4)
        assert toc.is_entry(padded) == reference_is_entry(padded) == (length <= 200)
        assert toc.toc_flags(text, [(0, len(text))]) == [reference_is_table_of_contents(text)] == [length <= 200]


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(toc_texts(), st.sampled_from([(8, 2), (20, 5), (40, 0), (60, 10)]), st.sampled_from(["structure", "tokens"]))
def test_chunk_flags_of_generated_documents_are_todays(text, sizes, strategy):
    text = text.strip()
    headings = tuple(Heading("H", 1, m.start(), "markdown") for m in re.finditer(r"(?<=\n\n)\S", text))[:3]
    document = Document(id="d", title="t.md", kind="markdown", pages=(Page(1, text),), text=text, headings=headings)
    chunks = chunk_document(document, *sizes, strategy)
    assert [TOC in c.flags for c in chunks] == [reference_is_table_of_contents(c.content) for c in chunks]
    if chunks:
        assert toc.toc_flags(text, [(0, len(text))]) == [reference_is_table_of_contents(text)]
