"""A stand-in rerank server on 127.0.0.1 (a real HTTP server in a thread) speaking TEI's, Cohere's and Jina's /rerank.

It scores a text by the share of the query's words it contains (so a text holding the query's words ranks first)
and answers best first, as the real servers do: a client must place scores by "index", not by position.
`fault` makes it misbehave: "401", "500" (any status), "not-json", "short" (one result too few), "twice" (an index
twice), "text-score" (a score that is no number), "silent" (accepts and never answers).
"""

from __future__ import annotations

import re

from tests.servers import SILENT, Loopback, Reply

WORD = re.compile(r"\w+")


def overlap(query: str, text: str) -> float:
    """Return the share of the query's words found in text (0 to 1): the stand-in's relevance."""
    words = set(WORD.findall(query.lower()))
    return len(words & set(WORD.findall(text.lower()))) / len(words) if words else 0.0


class RerankServer(Loopback):
    def __init__(self, fault: str = ""):
        self.fault = fault
        super().__init__(self.reply_to)

    def reply_to(self, request: dict) -> Reply | None:
        """Return the reply to one request: the fault's, or the scores best first; None (silent) for "silent"."""
        if self.fault == "silent":
            return SILENT
        status, answer = self.answer(request["path"], request["json"])
        return Reply(answer, status, content_type="application/json")

    def answer(self, path: str, request: dict) -> tuple[int, object]:
        if self.fault.isdigit():
            return int(self.fault), {"error": {"message": f"stand-in says {self.fault}"}}
        if self.fault == "not-json":
            return 200, b"<html>login</html>"
        tei = "texts" in request
        texts = request["texts"] if tei else request["documents"]
        scored = sorted(((overlap(request["query"], t), i) for i, t in enumerate(texts)), key=lambda x: -x[0])
        key = "score" if tei else "relevance_score"
        items = [{"index": i, key: s} for s, i in scored]
        if self.fault == "short":
            items = items[:-1]
        if self.fault == "twice":
            items[-1]["index"] = items[0]["index"]
        if self.fault == "text-score":
            items[0][key] = "high"
        return 200, items if tei else {"id": "x", "results": items, "meta": {}}

    @property
    def texts_seen(self) -> list[list[str]]:
        return [r["json"].get("texts") or r["json"].get("documents") for r in self.requests]
