"""Shared fixtures: where the real test material lives; the environment and server-like behaviour of page tests."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path

import numpy as np
import pypdf
import pytest
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject
from qdrant_client import QdrantClient, models

from rag import pipeline
from rag.chunking.chunker import Chunk, ChunkSettings
from rag.cli import main
from rag.documents.loader import SourceFile, load_document
from rag.documents.model import Document, Page
from rag.embeddings import get_embedder
from rag.embeddings.fake import FakeEmbedder
from rag.evaluation.querysets.queries import load_query_set
from rag.evaluation.querysets.squad import import_squad
from rag.store import legacy_keywords as sparse
from rag.store.client import Store
from rag.store.open import open_store
from tests.servers import Loopback, Reply

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"  # the real documents the tests read, with their origins and licences (README.md)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Return tests/data, the real test material every test shares (PDFs, Markdown, XQuAD-de)."""
    return DATA


def read_shared(shared: Path, relative: str) -> bytes:
    return (shared / relative).read_bytes()

@pytest.fixture(scope="module")
def xquad(shared_data):
    """Return (documents, queries) of the first three XQuAD articles, as RAG Lab reads them."""
    imported = import_squad((shared_data / "xquad-de/xquad.de.dev.json").read_bytes(), articles=3)
    documents = [load_document(d.text.encode(), d.filename) for d in imported.documents]
    lines = "\n".join(json.dumps(q, ensure_ascii=False) for q in imported.queries)
    return documents, load_query_set(lines, "queries.jsonl")



@pytest.fixture(scope="session", autouse=True)
def read_servers_stop_together():
    """Stop the loopback read servers of every folder the tests opened all at once when the session ends.

    Each store the app's pages open serves its reads (rag.store.reads); at exit rag stops them one after the other,
    each waiting out socketserver's 0.5 s poll: 38 s for the ~100 of a make test-fast run. In parallel it is one
    poll; rag's own stop at exit then finds them stopped."""
    yield
    from rag.store import reads

    with reads._SERVERS_LOCK:
        running = list(reads._SERVERS.values())
    stopping = [threading.Thread(target=server.shutdown, daemon=True) for server in running]
    for thread in stopping:
        thread.start()
    for thread in stopping:
        thread.join(10)


@pytest.fixture
def store() -> Store:
    """Return a fresh in-memory store: the real Qdrant engine, nothing on disk."""
    return open_store(":memory:")


@pytest.fixture
def app_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Give the app (AppTest) its own Qdrant folder, the fake embedder and an empty sample folder setting."""
    monkeypatch.setenv("RAG_QDRANT_PATH", str(tmp_path / "qdrant"))
    monkeypatch.setenv("RAG_EMBEDDER", "fake")
    monkeypatch.setenv("RAG_SAMPLE_DIR", str(tmp_path / "samples"))
    monkeypatch.setenv("RAG_DATA_ROOT", str(tmp_path))
    for name in ("QDRANT_URL", "QDRANT_API_KEY", "RAG_COLLECTION", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST",
                 "RAG_UI_SETTINGS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


# ---- fakes and helpers the test modules share ------------------------------------------------------------

class Counting(FakeEmbedder):
    """The fake embedder, keeping every document and query text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__(16)
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed_documents(self, texts):
        self.documents += list(texts)
        return super().embed_documents(texts)

    def embed_query(self, texts):
        self.queries += list(texts)
        return super().embed_query(texts)


def fake_embedder(dimension: int = 16, model_id: str | None = None) -> FakeEmbedder:
    """Return the project's fake embedder (rag.embeddings.fake) with dimension; model_id poses as another model."""
    embedder = FakeEmbedder(dimension)
    if model_id:
        embedder.model_id = model_id
    return embedder


TEXT = (
    "Passwörter müssen mindestens zwölf Zeichen lang sein. "
    "Die Prüfung erfolgt gegen eine Liste bekannter Passwörter. "
    "Mehrfaktor-Authentifizierung schützt Konten vor Übernahme. "
    "Sitzungen laufen nach dreißig Minuten Inaktivität ab. "
    "Protokolle enthalten keine geheimen Schlüssel."
)


def make_document(text: str = TEXT, doc_id: str = "doc-a", title: str = "richtlinie.md") -> Document:
    return Document(id=doc_id, title=title, kind="markdown", pages=(Page(1, text),), text=text)


def make_chunks(document: Document, size: int, overlap: int = 0) -> list[Chunk]:
    """Return character-window chunks of the document (the real chunker is tested elsewhere)."""
    chunks, start, index = [], 0, 0
    while start < len(document.text):
        end = min(start + size, len(document.text))
        content = document.text[start:end]
        chunks.append(Chunk(document.id, index, content, len(content.split()), ("Kapitel 1",), 1, 1, start, end))
        if end == len(document.text):
            break
        start, index = end - overlap, index + 1
    return chunks


def ingest(
    store: Store, embedder: FakeEmbedder, document: Document, size: int = 60, collection: str = "documents"
) -> tuple[int, ChunkSettings]:
    settings = ChunkSettings(chunk_size=size, overlap=10, strategy="tokens")
    chunks = make_chunks(document, size, 10)
    vectors = embedder.embed_documents([c.content for c in chunks])
    return store.upsert_document(collection, document, chunks, vectors, settings, embedder), settings


def make_foreign(client: QdrantClient) -> None:
    """Create a collection the way the existing pipeline did: one unnamed 1536-dim vector."""
    client.create_collection("documents", vectors_config=models.VectorParams(size=1536, distance="Cosine"))
    big = fake_embedder(1536)
    texts = ["Passwörter müssen lang sein.", "Katzen schlafen viel.", "Passwörter niemals protokollieren."]
    titles = ["policy.pdf", "tiere.pdf", "policy.pdf"]
    points = [
        models.PointStruct(id=i + 1, vector=v.tolist(), payload={"content": t, "document_title": d, "chunk_id": i})
        for i, (t, d, v) in enumerate(zip(texts, titles, big.embed_documents(texts), strict=True))
    ]
    client.upsert("documents", points)


def legacy_collection(store: Store, embedder, collection: str = "c") -> None:
    """Create collection as RAG Lab did before Qdrant's BM25: its metadata names the rag-lab-1 analyzer."""
    from rag.retrieval.records import vector_name as name_of
    from rag.store.client import META_KEY

    store._create_collection(collection, embedder, name_of(embedder.model_id))
    meta = store.client.get_collection(collection).config.metadata
    meta[META_KEY] = {k: v for k, v in meta[META_KEY].items() if k not in ("language", "child_size")} | {
        "analyzer": sparse.ANALYZER}  # nor children: they came later
    store.client.update_collection(collection, metadata=meta)


def store_texts(store: Store, texts: list[str], embedder, collection: str = "c", vectors=None) -> list[str]:
    """Store each text as one chunk of one document in a legacy collection; return the chunk ids in text order."""
    if not store.has_collection(collection):
        legacy_collection(store, embedder, collection)
    text = "\n\n".join(texts)
    document = Document(id="doc", title="doc.md", kind="markdown", pages=(Page(1, text),), text=text)
    chunks, start = [], 0
    for index, content in enumerate(texts):
        chunks.append(Chunk("doc", index, content, len(content.split()), (), 1, 1, start, start + len(content)))
        start += len(content) + 2
    vectors = embedder.embed_documents(texts) if vectors is None else np.asarray(vectors, dtype=np.float32)
    store.upsert_document(collection, document, chunks, vectors, ChunkSettings(100, 0, "tokens"), embedder)
    return [h.chunk_id for h in store.document_chunks(collection, "doc")]


def make_pdf(pages: list[list[str]], outline: list[tuple[str, int, int]] = ()) -> bytes:
    """Return a PDF with one Helvetica text line per entry; outline = (title, level, 0-based page)."""
    writer = pypdf.PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
            NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
        }
    )
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        escaped = (line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for line in lines)
        ops = ["BT /F1 11 Tf 14 TL 72 740 Td", *(f"({line}) Tj T*" for line in escaped), "ET"]
        stream = DecodedStreamObject()
        stream.set_data("\n".join(ops).encode("cp1252"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
    parents: dict[int, object] = {}
    for title, level, page_index in outline:
        parents[level] = writer.add_outline_item(title, page_index, parent=parents.get(level - 1))
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


PARAGRAPHS = {
    "berlin.txt": ["Berlin ist die Hauptstadt von Deutschland und hat rund 3,7 Millionen Einwohner.",
                   "Der Fernsehturm am Alexanderplatz ist 368 Meter hoch und wurde 1969 eröffnet.",
                   "Die Spree fließt durch die Stadt und mündet bei Spandau in die Havel."],
    "wien.txt": ["Wien liegt an der Donau und ist die Hauptstadt von Österreich.",
                 "Der Stephansdom ist das Wahrzeichen der Stadt; sein Südturm misst 136 Meter.",
                 "Das Riesenrad im Prater wurde 1897 gebaut."],
}


def ingest_paragraphs(store, collection: str, chunk_size: int) -> None:
    """Ingest the Berlin/Wien PARAGRAPHS into collection with the fake:64 embedder, no overlap."""
    files = [SourceFile(name, "\n\n".join(p).encode()) for name, p in PARAGRAPHS.items()]
    pipeline.ingest(files, collection, ChunkSettings(chunk_size, 0), get_embedder("fake:64"), store=store)


def span_query(title: str, paragraph: int, answer: str, text: str | None = None) -> dict:
    body = "\n\n".join(PARAGRAPHS[title])
    offset = body.index(PARAGRAPHS[title][paragraph]) + PARAGRAPHS[title][paragraph].index(answer)
    return {"query": text or PARAGRAPHS[title][paragraph], "document": title, "answer": answer,
            "answer_start": offset}


def make_old(store: Store, embedder: FakeEmbedder) -> None:
    """Create 'documents' the way RAG Lab did before keyword vectors: one named dense vector, no sparse."""
    meta = {"rag_lab": {"embedder": embedder.model_id, "dimension": embedder.dimension, "vector": "test-16"}}
    params = models.VectorParams(size=embedder.dimension, distance=models.Distance.COSINE)
    store.client.create_collection("documents", vectors_config={"test-16": params}, metadata=meta)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class FakeChatServer(Loopback):
    """A chat server on loopback (real HTTP): Ollama's /api/chat as NDJSON and OpenAI's /v1/chat/completions as
    server-sent events, both streamed in pieces; it records every request (path, headers, JSON body)."""

    def __init__(self, answer: str = "Die Frist beträgt drei Monate [Quelle 1]. Siehe auch [Quelle 9]."):
        self.answer = answer
        super().__init__(self.stream)

    def stream(self, request: dict) -> Reply:
        """Return self.answer word by word, in the wire format of the path asked."""
        words = [w + " " for w in self.answer.split(" ")]
        if request["path"] == "/api/chat":
            lines = [{"message": {"role": "assistant", "content": word}, "done": False} for word in words]
            return Reply(pieces=(*(json.dumps(line).encode() + b"\n" for line in lines), b'{"done": true}\n'))
        events = [{"choices": [{"delta": {"content": word}}]} for word in words]
        return Reply(pieces=(*(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events),
                             b"data: [DONE]\n\n"))


@pytest.fixture
def chat_server():
    server = FakeChatServer()
    yield server
    server.close()
