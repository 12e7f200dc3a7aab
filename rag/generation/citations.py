"""Which sources an answer cites: every `[Quelle N]` (also `[Quelle 1, 3]`, `[Quelle 2: Titel]`, `[Source 4]`),
mapped back to the context's numbered sources; numbers that name no source are reported, never dropped."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from rag.retrieval import Context, Source

_CITE = r"\[\s*(?:{labels})\s+(\d+(?:\s*(?:,|;|und|and|&)\s*(?:(?:{labels})\s+)?\d+)*)\s*(?::[^\]\n]*)?\]"
_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True)
class Citations:
    cited: list[Source]  # the sources the answer cites, by number
    unknown: list[int]  # numbers the answer cites that name no source in the context
    unused: list[Source]  # sources the answer never cites

    def to_dict(self) -> dict:
        keys = ("number", "document_title", "document_id", "chunk_index", "heading_path", "page_start", "page_end")
        return {
            "citations": [{k: list(v) if isinstance(v, tuple) else v for k, v in asdict(s).items() if k in keys}
                          for s in self.cited],
            "unknown_citations": self.unknown,
            "unused_sources": [s.number for s in self.unused],
        }


def citation_spans(answer: str, label: str = "Quelle") -> list[tuple[int, int, list[int]]]:
    """Return (start, end, numbers) of every citation in the answer, in order."""
    labels = "|".join(re.escape(x) for x in dict.fromkeys((label, "Quelle", "Quellen", "Source", "Sources")))
    return [(m.start(), m.end(), [int(n) for n in _NUMBER.findall(m.group(1))])
            for m in re.finditer(_CITE.format(labels=labels), answer, re.IGNORECASE)]


def cited_numbers(answer: str, label: str = "Quelle") -> list[int]:
    """Return the source numbers the answer cites, in order of first mention."""
    return list(dict.fromkeys(n for _, _, numbers in citation_spans(answer, label) for n in numbers))


def citations(answer: str, context: Context, label: str = "Quelle") -> Citations:
    by_number = {s.number: s for s in context.sources}
    numbers = cited_numbers(answer, label)
    cited = [by_number[n] for n in numbers if n in by_number]
    return Citations(cited, [n for n in numbers if n not in by_number],
                     [s for s in context.sources if s.number not in numbers])
