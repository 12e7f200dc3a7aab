"""Re-anchor a query set's answer spans to the text RAG Lab extracts today (after an extraction change).

    python -m bench.reanchor [--queries bench/data/english/queries.jsonl] [--documents bench/out/english]
                             [--check]

For every line with `answer` and `answer_start`, finds the answer in the document's text as
rag.documents.load_document reads it now: verbatim, else with any whitespace between its words (the
extraction moved a line break), else with whitespace anywhere or nowhere (it dropped a space). Of several
occurrences the one nearest the old offset wins. The line's `answer_start` is rewritten, and its `answer`
too when its whitespace differs (spans keep the document's own line breaks and read as the document does).
A line whose answer is not in the text any more is reported and left as it was: fix it by hand. --check
only reports. Every other field and the order of the lines stay. bench/data/english/SOURCES.md says when.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from rag.documents import load_document

ROOT = Path(__file__).resolve().parents[1]
ENGLISH_QUERIES = ROOT / "bench" / "data" / "english" / "queries.jsonl"
ENGLISH_DOCUMENTS = ROOT / "bench" / "out" / "english"  # fetched by bench/data/english/fetch.sh


def occurrences(text: str, answer: str) -> list[tuple[int, str]]:
    """Return (offset, text found) of every place answer occurs in text: verbatim, else with other whitespace
    between its words, else with whitespace anywhere or nowhere ("⟨wd ⟩" read as "⟨wd⟩")."""
    found = [(m.start(), answer) for m in re.finditer(re.escape(answer), text)]
    words = answer.split()
    if found or not words:
        return found
    for joint, pieces in ((r"\s+", words), (r"\s*", list("".join(words)))):
        pattern = re.compile(joint.join(re.escape(piece) for piece in pieces))
        found = [(m.start(), m.group()) for m in pattern.finditer(text)]
        if found:
            return found
    return []


def reanchor(row: dict, text: str) -> tuple[dict, str]:
    """Return the row with its span moved to the nearest occurrence of its answer, and what happened to it.

    What happened: "ok" (the span held already), "moved", or "missing" (the row is returned unchanged).
    """
    answer, start = row["answer"], row["answer_start"]
    if text[start : start + len(answer)] == answer:
        return row, "ok"
    places = occurrences(text, answer)
    if not places:
        return row, "missing"
    offset, span = min(places, key=lambda place: (abs(place[0] - start), place[0]))
    return row | {"answer": span, "answer_start": offset}, "moved"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default=str(ENGLISH_QUERIES), help="JSONL query set, rewritten in place")
    parser.add_argument("--documents", default=str(ENGLISH_DOCUMENTS), help="folder holding the documents")
    parser.add_argument("--check", action="store_true", help="report only; do not rewrite the file")
    args = parser.parse_args(argv)
    path, folder = Path(args.queries), Path(args.documents)
    texts: dict[str, str] = {}
    rows, counts, missing = [], {"ok": 0, "moved": 0, "missing": 0}, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        if row.get("answer") is not None and row.get("answer_start") is not None:
            name = row["document"]
            if name not in texts:
                texts[name] = load_document((folder / name).read_bytes(), name).text
            row, what = reanchor(row, texts[name])
            counts[what] += 1
            if what == "missing":
                missing.append(f"line {number}: {row['answer'][:50]!r} is not in {name}")
        rows.append(row)
    print(f"{sum(counts.values())} spans: {counts['ok']} held, {counts['moved']} moved, {counts['missing']} not found")
    for message in missing:
        print(message, file=sys.stderr)
    if counts["moved"] and not args.check:
        path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        print(f"rewrote {path}")
    return 1 if missing or (args.check and counts["moved"]) else 0


if __name__ == "__main__":
    raise SystemExit(main())
