"""The CLI reads a Qdrant Edge folder that another process (the app) holds, through that process (rag.store.reads);
its writes are refused in one line; after a kill -9 of the holder the CLI opens the folder itself. Two real
processes on the real engine: the holder is a Python subprocess that opens the store, serves its reads and
ingests on command, as the app does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.documents.loader import SourceFile
from rag.embeddings import get_embedder
from rag.retrieval import SearchRequest
from rag.store.edge import wire
from rag.store.open import open_store
from rag.store.reads import ENDPOINT_FILE, endpoint, serve_reads, stop_serving
from tests.conftest import ROOT

SETTINGS = ChunkSettings(60, 0, "structure")
TITLE = "vertrag.md"
PAUSE_S = 0.05


def version_text(version: int) -> str:
    """Return the text of a document version: version 0 has 4 paragraphs marked 'eins', version 1 has 7 marked
    'zwei' (each about one chunk of SETTINGS)."""
    marker, count = ("eins", 4) if version == 0 else ("zwei", 7)
    paragraphs = [f"Absatz {i} {marker}: Die Kündigungsfrist des Vertrags beträgt drei Monate zum Monatsende, "
                  f"und die Miete ist monatlich im Voraus auf das Konto des Vermieters zu zahlen, Fassung {marker}."
                  for i in range(count)]
    return "# Vertrag\n\n" + "\n\n".join(paragraphs) + "\n"


def write_version(store, version: int) -> int:
    """Ingest version `version` of TITLE (replacing the other one); return its chunk count."""
    data = version_text(version).encode("utf-8")
    (result,) = pipeline.ingest([SourceFile(TITLE, data)], "c", SETTINGS, get_embedder("fake"), store=store,
                                child_size=0)  # points = chunks
    assert result.ok, result.error
    return result.chunks


def hold() -> None:
    """The holder (run as a subprocess): open the folder, serve its reads, then on stdin: "search Q" prints the hits
    as its own search gives them; "churn" re-ingests the two versions in turn until "stop" (prints the count)."""
    import threading

    from rag.cli.store import hit_json

    store = open_store(path=sys.argv[1])
    serve_reads(store)
    write_version(store, 0)
    print("ready", flush=True)
    halt, done = threading.Event(), []

    def churn() -> None:
        while not halt.wait(PAUSE_S):  # an app's ingest spends most of its time embedding, outside the store
            write_version(store, len(done) % 2)
            done.append(1)

    worker = threading.Thread(target=churn)
    for line in sys.stdin:
        command, _, rest = line.strip().partition(" ")
        if command == "search":
            hits = pipeline.search(rest, "c", SearchRequest(top_k=5), store=store, embedder=get_embedder("fake"))
            print(json.dumps([hit_json(h, "hybrid") for h in hits], ensure_ascii=False), flush=True)
        elif command == "churn":
            worker.start()
            print("churning", flush=True)
        elif command == "stop":
            halt.set()
            worker.join()
            print(f"stopped {len(done)}", flush=True)


@pytest.fixture
def holder(tmp_path: Path):
    """A holder process on tmp_path/qdrant, ready (version 0 ingested); killed at the end."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-c", "from tests.store.test_reads_beside_app import hold; hold()", str(tmp_path / "qdrant")],
        cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "ready"
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


def ask(process: subprocess.Popen, line: str) -> str:
    process.stdin.write(line + "\n")
    process.stdin.flush()
    return process.stdout.readline().strip()


def rag(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag", "--store", str(folder), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=180, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.crash
def test_the_cli_reads_through_the_holder_writes_are_refused_and_a_killed_holder_frees_the_folder(tmp_path, holder):
    folder = tmp_path / "qdrant"
    query = "Wie lang ist die Kündigungsfrist?"
    read = rag(folder, "search", query, "--collection", "c", "--json", "--embedder", "fake")
    assert read.returncode == 0, read.stderr
    assert read.stderr.strip() == f"note: reading through the app that holds {folder} (pid {holder.pid}); " \
                                  "writes stay with it"
    assert json.loads(read.stdout)["hits"] == json.loads(ask(holder, f"search {query}"))  # scores to the last bit
    documents = rag(folder, "documents", "--collection", "c", "--json")
    assert [(d["title"], d["chunks"], d["complete"]) for d in json.loads(documents.stdout)] == [(TITLE, 4, True)]
    listed = json.loads(rag(folder, "collections", "--json").stdout)
    assert [(c["name"], c["points"], c["index"]["points"]) for c in listed] == [("c", 4, 4)]
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"query": query, "document": TITLE}) + "\n", encoding="utf-8")
    evaluated = rag(folder, "eval", str(queries), "--collection", "c", "--json", "--embedder", "fake")
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["metrics"]["hit@5"] == 1.0
    context = rag(folder, "context", query, "--collection", "c", "--json", "--embedder", "fake")
    assert context.returncode == 0 and f"[Quelle 1: {TITLE}" in json.loads(context.stdout)["text"], context.stderr

    other = tmp_path / "other.md"
    other.write_text(version_text(1), encoding="utf-8")
    write = rag(folder, "ingest", str(other), "--collection", "c", "--embedder", "fake")
    assert write.returncode == 1
    assert write.stderr.strip().splitlines() == [
        f"error: The store {folder} is open in the app (pid {holder.pid}); writes go through the app or stop it "
        "first: ingest, delete and index on its pages, or stop it (Ctrl+C where it runs) and run this command again."]
    for command in (["delete-collection", "c"], ["index", "--collection", "c"]):
        refused = rag(folder, *command)
        assert refused.returncode == 1 and "writes go through the app" in refused.stderr, refused.stderr

    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (folder / ENDPOINT_FILE).exists() and endpoint(str(folder)) is None  # left behind, its process gone
    alone = rag(folder, "search", query, "--collection", "c", "--json", "--embedder", "fake")
    assert alone.returncode == 0 and "reading through" not in alone.stderr, alone.stderr
    assert json.loads(alone.stdout)["hits"] == json.loads(read.stdout)["hits"]
    assert not (folder / ENDPOINT_FILE).exists()
    written = rag(folder, "ingest", str(other), "--collection", "c", "--embedder", "fake")
    assert written.returncode == 0, written.stderr


@pytest.mark.slow
def test_a_read_beside_the_holders_ingests_sees_one_whole_version(tmp_path, holder):
    """The holder re-ingests the document (4 chunks 'eins', 7 chunks 'zwei', in turn) while the CLI searches all of
    it and lists it: each answer holds every chunk of exactly one version, never a mix or a part."""
    folder = tmp_path / "qdrant"
    assert ask(holder, "churn") == "churning"
    seen = []
    for _ in range(3):
        read = rag(folder, "search", "Kündigungsfrist", "--collection", "c", "--json", "--embedder", "fake",
                   "--mode", "dense", "--top-k", "50")
        assert read.returncode == 0, read.stderr
        contents = [h["content"] for h in json.loads(read.stdout)["hits"]]
        marks = {"eins" if "eins" in c else "zwei" for c in contents if "Absatz" in c}
        assert len(marks) == 1, contents
        (mark,) = marks
        assert sum("Absatz" in c for c in contents) == (4 if mark == "eins" else 7)
        seen.append(mark)
        listed = json.loads(rag(folder, "documents", "--collection", "c", "--json").stdout)
        assert [(d["title"], d["complete"]) for d in listed] == [(TITLE, True)], listed
        assert listed[0]["chunks"] in (4, 7), listed
    stopped = ask(holder, "stop")
    assert stopped.startswith("stopped ") and int(stopped.split()[1]) >= 2, stopped  # the reads ran beside writes


@pytest.mark.slow
def test_the_legacy_local_engine_keeps_refusing_in_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAG_QDRANT_ENGINE", "local")
    script = ("import sys, time; from rag.store.open import open_store; from rag.store.reads import serve_reads; "
              "print(serve_reads(open_store(path=sys.argv[1])), flush=True); time.sleep(120)")
    process = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                               text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert process.stdout.readline().strip() == "None"  # nothing served
        read = rag(tmp_path, "collections", "--json")
        assert read.returncode == 1
        assert read.stderr.strip().splitlines() == [
            f"error: The Qdrant folder {tmp_path} is in use by another process (another RAG Lab app or CLI). Close "
            "that one, or run a Qdrant server and set QDRANT_URL so several processes can share it."]
    finally:
        process.kill()
        process.wait()


def test_the_server_answers_only_its_token_on_loopback_and_only_reads(tmp_path: Path) -> None:
    store = open_store(path=str(tmp_path / "qdrant"))
    try:
        server = serve_reads(store)
        assert server is not None and serve_reads(store) is server
        found = endpoint(str(tmp_path / "qdrant"))
        assert found["pid"] == os.getpid() and found["port"] == server.port
        assert (os.stat(tmp_path / "qdrant" / ENDPOINT_FILE).st_mode & 0o777) == 0o600
        url, key = f"http://127.0.0.1:{server.port}/read", {"Authorization": f"Bearer {found['token']}"}
        body = {"method": "collection_names", "args": [], "kwargs": {}}
        with httpx.Client(trust_env=False) as http:
            assert http.post(url, json=body, headers=key).json() == {"result": []}
            assert http.post(url, json=body).status_code == 403  # no token
            assert http.post(url, json=body, headers={"Authorization": "Bearer wrong"}).status_code == 403
            assert http.post(url, json=body, headers={**key, "Origin": "http://localhost:8501"}).status_code == 403
            assert http.post(url, json=body, headers={**key, "Sec-Fetch-Mode": "cors"}).status_code == 403
            assert http.post(url, json=body, headers={**key, "Host": "rebound.example:80"}).status_code == 403
            assert http.post(url.replace("/read", "/x"), json=body, headers=key).status_code == 403
            write = {"method": "delete_collection", "args": ["c"], "kwargs": {}}
            assert http.post(url, json=write, headers=key).status_code == 400
            missing = http.post(url, json={**body, "method": "collection_config", "args": ["nope"]}, headers=key)
            assert missing.json() == {"error": "Collection nope not found", "kind": "ValueError"}
        assert server.server_address[0] == "127.0.0.1"
        stop_serving(store)
        assert not (tmp_path / "qdrant" / ENDPOINT_FILE).exists()
    finally:
        store.close()


def test_requests_and_answers_cross_as_json_unchanged() -> None:
    from qdrant_client import models

    from rag.store.edge.api import EdgePoint

    request = models.QueryRequest(
        prefetch=[models.Prefetch(query=[0.25, -1.0], using="dense", limit=40,
                                  filter=models.Filter(must=[models.FieldCondition(
                                      key="document_id", match=models.MatchAny(any=["a", "b"]))])),
                  models.Prefetch(query=models.SparseVector(indices=[3, 9], values=[0.5, 1.5]), using="bm25",
                                  limit=40)],
        query=models.FusionQuery(fusion=models.Fusion.RRF), limit=10, with_payload=["content"])
    point = EdgePoint("9c8c4588-4611-5008-af98-344a4f0ed09e", 3, 0.1 + 0.2, {"content": "Kündigung", "n": [1, 2]},
                      {"dense": [0.1, 0.7], "bm25": models.SparseVector(indices=[1], values=[2.0])})
    sent = json.loads(json.dumps(wire.encode([request, point, ("a", 1)])))
    back = wire.decode(sent)
    assert back == [request, point, ["a", 1]]
    assert back[1].score == 0.1 + 0.2  # the last bit of a score survives
    with pytest.raises(ValueError, match="unknown model"):
        wire.decode({"$model": "os", "value": {}})


@pytest.fixture
def commit_in_the_read(tmp_path: Path, monkeypatch):
    """A store holding version 0 of TITLE and an ingest of version 1 written but not committed; returns (store,
    arm): arm(method) makes the first call of that Store method commit version 1 (retiring and deleting version 0)
    right after it returns, as another thread or process would between two engine calls of one read."""
    from rag.store.client import Store

    store = open_store(path=str(tmp_path / "qdrant"))
    write_version(store, 0)
    held = []
    monkeypatch.setattr(Store, "commit_generation", lambda self, *args, **kwargs: held.append((args, kwargs)))
    write_version(store, 1)
    monkeypatch.undo()
    (args, kwargs), = held

    def arm(method: str) -> None:
        original = getattr(Store, method)

        def then_commit(self, *a, **k):
            answer = original(self, *a, **k)
            if held:
                held.pop()
                Store.commit_generation(self, *args, **kwargs)
            return answer

        monkeypatch.setattr(Store, method, then_commit)

    yield store, arm
    store.close()


@pytest.mark.slow
def test_a_commit_between_a_searchs_registry_read_and_its_query_is_not_seen(commit_in_the_read):
    store, arm = commit_in_the_read
    arm("search_filter")
    embedder = get_embedder("fake")
    hits = store.search("c", embedder.embed_query(["Kündigungsfrist"])[0], embedder, SearchRequest(top_k=50))
    assert sorted("zwei" in h.content for h in hits if "Absatz" in h.content) == [True] * 7  # all of version 1


@pytest.mark.slow
def test_a_commit_between_a_listings_registry_read_and_its_scroll_is_not_seen(commit_in_the_read):
    store, arm = commit_in_the_read
    arm("_collected_registry")
    assert [(d.title, d.chunks, d.complete) for d in store.documents("c")] == [(TITLE, 7, True)]
