"""A stand-in rerank server on 127.0.0.1 (a real HTTP server in a thread) speaking TEI's, Cohere's and Jina's /rerank.

It scores a text by the share of the query's words it contains (so a text holding the query's words ranks first)
and answers best first, as the real servers do: a client must place scores by "index", not by position.
`fault` makes it misbehave: "401", "500" (any status), "not-json", "short" (one result too few), "twice" (an index
twice), "text-score" (a score that is no number), "silent" (accepts and never answers).
"""

from __future__ import annotations

import http.server
import json
import re
import threading

WORD = re.compile(r"\w+")


def overlap(query: str, text: str) -> float:
    """Return the share of the query's words found in text (0 to 1): the stand-in's relevance."""
    words = set(WORD.findall(query.lower()))
    return len(words & set(WORD.findall(text.lower()))) / len(words) if words else 0.0


class RerankServer:
    def __init__(self, fault: str = ""):
        self.fault, self.requests, self.release = fault, [], threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (the http.server API)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.requests.append({"path": self.path, "headers": dict(self.headers.items()),
                                        "json": json.loads(body or b"null")})
                if server.fault == "silent":
                    server.release.wait(60)
                    return
                status, answer = server.answer(self.path, server.requests[-1]["json"])
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

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

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
