"""Hostile input stays bounded: megabyte-sized runs of spaces, dots, dashes, `#`, digits and one huge word.

Every regex in text cleaning, heading detection, chunking and keyword analysis must be linear. Before the
fix, `a` + 100,000 spaces + `x` took 64 s to clean (a `[ \\t]+$` MULTILINE regex) and a million spaces
made tiktoken fail with "Max stack size exceeded"; at these sizes a quadratic step takes hours, so a
timeout (not a timed assertion) is the guard. A regex holds the GIL, so no thread can interrupt it (not
even pytest-timeout's): each case runs in a forked child that is killed when it overruns.
"""

from __future__ import annotations

import multiprocessing
import traceback
from collections.abc import Callable

import pytest

from rag.chunking import tokens
from rag.chunking.chunker import chunk_document
from rag.documents.headings import markdown_headings, numbered_headings
from rag.documents.loader import load_document
from rag.documents.pdf import clean_pdf_text
from rag.store import legacy_keywords as sparse

MB = 1_000_000
HOSTILE = {
    "spaces": b"a" + b" " * MB + b"x",
    "tabs and spaces": b"a" + b" \t" * (MB // 2) + b"x",
    "dots": b"a" + b"." * MB + b"x",
    "dashes": b"-" * MB,
    "hashes": b"#" * MB,
    "heading with spaces": b"# a" + b" " * MB + b"b",
    "closing hashes": b"## Titel" + b" " * MB + b"#" * 1000,
    "digits": b"1" * MB,
    "numbered lines": b"1.1 Titel\n" * (MB // 10),
    "dot leaders": (b"2.1 Kapitel " + b"." * 300 + b" 17\n") * (MB // 300),
    "newlines": b"\n" * MB + b"a",
    "sentence ends": b". " * (MB // 2),
    "one 5 MB word": b"x" * (5 * MB),
}


GUARD_SECONDS = 120  # each case takes a few seconds when linear, hours when quadratic


@pytest.fixture(autouse=True, scope="module")
def _warm_caches() -> None:
    """Load the encoding and its token table once, here, so the forked children inherit them."""
    tokens.TokenIndex("warm up")


def _child(queue, function, args) -> None:
    try:
        function(*args)
        queue.put(None)
    except BaseException:  # reported to the parent, which fails the test with it
        queue.put(traceback.format_exc())


def bounded(function: Callable, *args) -> None:
    """Run function(*args) in a forked child; fail if it raises or does not finish within GUARD_SECONDS."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue, function, args))
    child.start()
    child.join(GUARD_SECONDS)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail(f"{function.__name__} did not finish within {GUARD_SECONDS} s: a step is not linear")
    error = queue.get(timeout=5)
    assert error is None, error


def _check_chunks(document, chunks, chunk_size: int) -> None:
    for chunk in chunks:
        assert document.text[chunk.start : chunk.end] == chunk.content
        assert chunk.token_count <= chunk_size


@pytest.mark.slow
@pytest.mark.timeout(GUARD_SECONDS + 60)
@pytest.mark.parametrize("suffix", [".txt", ".md"])
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_text_is_read_and_chunked_in_bounded_time(name: str, suffix: str):
    bounded(_read_and_chunk, HOSTILE[name], "hostile" + suffix)


def _read_and_chunk(data: bytes, filename: str) -> None:
    document = load_document(data, filename)
    chunks = chunk_document(document, 600, 80)
    _check_chunks(document, chunks, 600)
    assert chunks, "the text has non-space characters, so there is at least one chunk"
    for chunk in chunks[:500]:
        sparse.chunk_vector(chunk.content)


@pytest.mark.timeout(GUARD_SECONDS + 60)
def test_trailing_spaces_are_removed_line_by_line():
    bounded(_trailing_spaces)


def _trailing_spaces() -> None:
    document = load_document(b"a" + b" " * MB + b"x  \nb \t\n", "spaces.txt")
    assert document.text == "a" + " " * MB + "x\nb"


@pytest.mark.slow
@pytest.mark.timeout(GUARD_SECONDS + 60)
def test_a_million_spaces_are_tokenized_and_counted_consistently():
    bounded(_million_spaces)


def _million_spaces() -> None:
    text = "Anfang" + " " * MB + "Ende " * 100
    ids = tokens.encode(text)
    assert tokens.count(text) == len(ids) == len(tokens.encode_array(text, threads=2))
    index = tokens.TokenIndex(text)
    assert index.count(0, len(text)) == len(ids)
    assert tokens.decode(ids) == text


@pytest.mark.slow
@pytest.mark.timeout(GUARD_SECONDS + 60)
@pytest.mark.parametrize("line", ["# a" + " " * MB + "b", "## T" + " " * MB + "#" * 5000, "#" * MB])
def test_markdown_heading_lines_of_a_megabyte(line: str):
    bounded(_markdown_line, line)


def _markdown_line(line: str) -> None:
    headings = markdown_headings(line + "\n\nText\n")
    assert [h.title[:1] for h in headings] in ([], ["a"], ["T"])


def test_closing_hashes_are_not_part_of_the_title():
    assert [h.title for h in markdown_headings("## Usage ##\n### C#\n# Ende #   \n")] == ["Usage", "C#", "Ende"]


@pytest.mark.timeout(GUARD_SECONDS + 60)
def test_numbered_headings_on_long_lines():
    bounded(_numbered_long_lines)


def _numbered_long_lines() -> None:
    text = ("2.1 Methoden\n\n" + "Wort " * 200_000 + "\n\n") * 5
    assert [h.title for h in numbered_headings(text)] == ["2.1 Methoden"]


@pytest.mark.timeout(GUARD_SECONDS + 60)
@pytest.mark.parametrize("raw", [" " * MB + "x", "-\n" * (MB // 2), "Wort-\n" + "x" * MB, "." * MB])
def test_pdf_page_cleaning_of_a_megabyte(raw: str):
    bounded(_clean_pdf, raw)


def _clean_pdf(raw: str) -> None:
    assert len(clean_pdf_text(raw, 1)) <= len(raw)
