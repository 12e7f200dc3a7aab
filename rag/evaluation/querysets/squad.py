"""SQuAD-style JSON (SQuAD 1.1/2.0, XQuAD) -> documents (one .txt per article) and a query set.

Each article becomes one document: its paragraphs, cleaned the way rag.documents reads text files, joined
by blank lines; the title is the article title made a safe file name ("Southern_California" ->
"Southern California.txt"), which is also the title load_document gives the written file. Each answered
question becomes a query-set line whose answer_start is an offset into *that document's text as RAG Lab
reads it*, checked: text[answer_start:answer_start + len(answer)] == answer for every line.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from rag.documents import Document, clean_plain_text, load_document
from rag.errors import InvalidSettingsError, QuerySetError
from rag.evaluation.querysets.queries import Query
from rag.words import counted, plural

PARAGRAPH_SEPARATOR = "\n\n"
QUERIES_FILE = "queries.jsonl"
MAX_NAME = 120  # characters of a file name before ".txt"
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]+')
LAYOUT = '{"data": [{"title": ..., "paragraphs": [{"context": ..., "qas": [{"question": ..., "answers": [...]}]}]}]}'


@dataclass(frozen=True)
class SquadDocument:
    filename: str  # also the title load_document gives it
    text: str  # exactly load_document(text.encode(), filename).text


@dataclass
class SquadImport:
    documents: list[SquadDocument] = field(default_factory=list)
    queries: list[dict] = field(default_factory=list)  # query-set lines: query, document, answer, answer_start, id
    notes: list[str] = field(default_factory=list)  # what was left out and why


def document_filename(title: str, taken: set[str]) -> str:
    """Return a safe, unique .txt file name for an article title (underscores become spaces)."""
    name = unicodedata.normalize("NFC", title.replace("_", " "))
    name = " ".join(_UNSAFE.sub(" ", name).split()).strip(" .")[:MAX_NAME].strip(" .") or "article"
    candidate, number = f"{name}.txt", 2
    while candidate.lower() in taken:
        candidate, number = f"{name} ({number}).txt", number + 1
    taken.add(candidate.lower())
    return candidate


def import_squad(data: bytes | str | dict, source: str = "the file", articles: int | None = None) -> SquadImport:
    """Return the documents and query set of a SQuAD-style dataset (the first `articles` articles if given)."""
    parsed = data if isinstance(data, dict) else _parse(data, source)
    entries = parsed.get("data") if isinstance(parsed, dict) else None
    if not isinstance(entries, list) or not all(isinstance(a, dict) for a in entries):
        raise QuerySetError(f"{source} is not in the SQuAD layout {LAYOUT}.")
    result, taken = SquadImport(), set()
    for article in entries[:articles]:
        _add_article(result, article, taken, source)
    if not result.queries:
        raise QuerySetError(f"{source} holds no answered questions; nothing to import.")
    return result


def _parse(data: bytes | str, source: str) -> object:
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise QuerySetError(f"{source} is not JSON ({error}). Give a SQuAD-style .json file.") from None
    except RecursionError:
        raise QuerySetError(f"{source} is nested too deeply to read. Give a SQuAD-style .json file.") from None


def _add_article(result: SquadImport, article: dict, taken: set[str], source: str) -> None:
    title = str(article.get("title") or f"article {len(result.documents) + 1}")
    paragraphs = article.get("paragraphs")
    if not isinstance(paragraphs, list):
        raise QuerySetError(f"{source}: article '{title}' has no 'paragraphs' list ({LAYOUT}).")
    filename = document_filename(title, taken)
    texts: list[str] = []
    lines: list[dict] = []
    offset, skipped = 0, 0
    for paragraph in paragraphs:
        context = str(paragraph.get("context") or "") if isinstance(paragraph, dict) else ""
        cleaned = clean_plain_text(context)
        if not cleaned:
            continue
        for qa in paragraph.get("qas") or []:
            line = _query_line(qa, context, cleaned, offset, filename)
            if line is None:
                skipped += 1
            else:
                lines.append(line)
        texts.append(cleaned)
        offset += len(cleaned) + len(PARAGRAPH_SEPARATOR)
    if not texts:
        result.notes.append(f"'{title}': no paragraph text; left out.")
        return
    text = _checked_text(PARAGRAPH_SEPARATOR.join(texts), filename, lines)
    result.documents.append(SquadDocument(filename, text))
    result.queries.extend(lines)
    if skipped:
        result.notes.append(f"'{title}': {counted(skipped, 'question')} without an answer found in the text "
                            f"{plural(skipped, 'was', 'were')} left out.")


def _query_line(qa: object, context: str, cleaned: str, base: int, filename: str) -> dict | None:
    """Return the query-set line of one question, or None when it has no answer that is in the paragraph."""
    if not isinstance(qa, dict) or not str(qa.get("question") or "").strip() or qa.get("is_impossible"):
        return None
    answers = [a for a in qa.get("answers") or [] if isinstance(a, dict) and str(a.get("text") or "").strip()]
    if not answers:
        return None
    answer = clean_plain_text(str(answers[0]["text"]))  # cleaned like the paragraph, inner spaces kept
    start = answers[0].get("answer_start")
    position = locate(cleaned, answer, _estimate(context, start))
    if position is None:
        return None
    line = {"query": " ".join(str(qa["question"]).split()), "document": filename, "answer": answer,
            "answer_start": base + position}
    return line | ({"id": str(qa["id"])} if qa.get("id") is not None else {})


def _estimate(context: str, start: object) -> int:
    """Return where answer_start (an offset into the raw context) roughly lands in the cleaned paragraph."""
    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
        return 0
    prefix = context[:start]
    return len(clean_plain_text(prefix + "x")) - 1  # "x" keeps the prefix's trailing space from being stripped


def locate(text: str, answer: str, near: int) -> int | None:
    """Return the offset of the occurrence of answer in text nearest to `near`, or None if it is not there."""
    best, found = None, text.find(answer)
    while found >= 0:
        if best is None or abs(found - near) < abs(best - near):
            best = found
        found = text.find(answer, found + 1)
    return best


def _checked_text(text: str, filename: str, lines: list[dict]) -> str:
    """Return text after checking that load_document reads the written file as text and every span holds."""
    read = load_document(text.encode("utf-8"), filename).text
    if read != text:
        raise QuerySetError(f"'{filename}': the text RAG Lab reads back differs from the imported text, so the answer "
                       "offsets would be wrong. This is a bug in the importer; please report it.")
    for line in lines:
        start = line["answer_start"]
        if text[start : start + len(line["answer"])] != line["answer"]:
            raise QuerySetError(f"'{filename}': the answer span of {line['query']!r} does not hold its answer. "
                           "This is a bug in the importer; please report it.")
    return text


def sweep_input(result: SquadImport) -> tuple[list[Document], list[Query]]:
    """Return the imported documents as RAG Lab reads them and the query set, ready for a sweep."""
    documents = [load_document(d.text.encode("utf-8"), d.filename) for d in result.documents]
    queries = [Query(q["query"], (q["document"],), q["answer"], q["answer_start"], line)
               for line, q in enumerate(result.queries, 1)]
    return documents, queries


def write_import(result: SquadImport, out: str | Path) -> list[Path]:
    """Write the documents as .txt files and queries.jsonl into folder out; return the paths written."""
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for document in result.documents:
            path = folder / document.filename
            path.write_text(document.text, encoding="utf-8")
            paths.append(path)
        queries = folder / QUERIES_FILE
        queries.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in result.queries),
                           encoding="utf-8")
    except OSError as error:
        raise InvalidSettingsError(
            f"Cannot write to {folder}: {error.strerror or error}. Choose a writable folder.") from error
    return [*paths, queries]


def squad_queries(data: bytes, name: str) -> list[Query]:
    """Return the query set of a SQuAD-style file: each question with its article's file name and answer span."""
    return sweep_input(import_squad(data, name))[1]
