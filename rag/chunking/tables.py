"""Markdown tables for the chunker: cut only between rows, and give a chunk that continues a table its header.

A pipe table is a header row, a delimiter row (`---|:---:|---`, `| :-- | --: |`) and the rows up to a blank
line or a line without `|`, outside fenced code. In a Markdown document the structure strategy

- ends a chunk inside a table only at the end of a row (a row longer than the whole chunk is still cut),
- starts the next chunk (its overlap) only at the start of a body row, and
- gives a chunk that starts in a table's body the table's header and delimiter rows (Chunk.table_header):
  the embedder, the keyword index and the LLM context read them before the chunk's text, so "| `string` |
  REQUIRED |" keeps its column names. The chunk's own content and offsets stay the document's text.

Plain text and PDF documents have no tables here: their chunks are cut exactly as before.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

import rag.chunking.tokens as tokens

_DELIMITER = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Table:
    start: int  # where the header row begins
    body: int  # where the first body row begins (== end for a table without rows)
    end: int  # the end of the last row (before its line break)
    header: str  # the header row and the delimiter row, as written


class Tables:
    """The pipe tables of a Markdown text, and where a chunk may end and start around them."""

    def __init__(self, text: str):
        self.text = text
        self.tables = find_tables(text)
        self._starts = [table.start for table in self.tables]

    def __bool__(self) -> bool:
        return bool(self.tables)

    def table_at(self, pos: int) -> Table | None:
        """Return the table whose text holds offset pos strictly after its first character, else None."""
        i = bisect.bisect_left(self._starts, pos) - 1
        table = self.tables[i] if i >= 0 else None
        return table if table is not None and table.start < pos < table.end else None

    def fit_end(self, index: tokens.TokenIndex, a: int, b: int, n: int, limit: int, chunk_size: int
                ) -> tuple[int, int]:  # fmt: skip
        """Return (end, token count) of the chunk [a, b) (ending by limit): when b cuts a row, the row's end if the
        row fits whole, else the last row end before b (before the table when b is inside its header rows)."""
        text = self.text
        table = self.table_at(b)
        if table is None or (text[b] == "\n" and b >= table.body):
            return b, n
        if b >= table.body:  # a sentence end inside the row: the row's end if it fits
            row_end = text.find("\n", b, min(table.end, limit))
            row_end = row_end if row_end >= 0 else min(table.end, limit)
            if (count := index.count(a, row_end)) <= chunk_size:
                return row_end, count
        line_end = text.rfind("\n", a + 1, b if b >= table.body else table.start)
        end = line_end
        while end > a and text[end - 1].isspace():
            end -= 1
        if end <= a:  # one row longer than the chunk: cut inside it after all
            return b, n
        return end, index.count(a, end)

    def fit_start(self, start: int, b: int, end: int) -> int:
        """Return where the chunk after one ending at b starts, given start: inside a table at the start of a body
        row (never the header's delimiter row), else at b's next word when no such row starts before b."""
        text = self.text
        table = self.table_at(start)
        if table is None:
            return start
        if start < table.body:
            row = table.body
        elif not text[text.rfind("\n", 0, start) + 1 : start].strip():  # at a row's start (after its indent)
            return start
        else:
            row = text.find("\n", start, b) + 1  # 0: none
        while 0 < row < b and text[row].isspace():  # past the table: its blank line
            row += 1
        if 0 < row < b:
            return row
        while b < end and text[b].isspace():
            b += 1
        return b

    def header_at(self, start: int) -> str:
        """Return the header and delimiter rows of the table whose body holds offset start, else ""."""
        table = self.table_at(start)
        return table.header if table is not None and start >= table.body else ""


def find_tables(text: str) -> list[Table]:
    """Return the pipe tables of a Markdown text in order (outside fenced code)."""
    tables: list[Table] = []
    lines, starts, offset = text.split("\n"), [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    fence, i = "", 0
    while i < len(lines) - 1:
        line = lines[i]
        opening = _FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and not line[opening.end():].strip():
                fence = ""
        elif opening:
            fence = opening.group(1)
        elif "|" in line and line.strip() and _is_delimiter(lines[i + 1]):
            last = i + 1
            while last + 1 < len(lines) and lines[last + 1].strip() and "|" in lines[last + 1]:
                last += 1
            body = starts[i + 2] if last > i + 1 else starts[last] + len(lines[last])
            tables.append(Table(starts[i], body, starts[last] + len(lines[last]), f"{line}\n{lines[i + 1]}"))
            i = last + 1
            continue
        i += 1
    return tables


def _is_delimiter(line: str) -> bool:
    """Return whether line is a table's delimiter row: dashes (and colons) between pipes."""
    return "-" in line and "|" in line and _DELIMITER.fullmatch(line) is not None
