"""A visitor types their own server into every sidebar field: the operator's keys never arrive there.

The app runs with secret keys in its environment; a recording server on loopback answers as an
OpenAI-compatible embeddings server, as Ollama, and (with errors) as Qdrant, and keeps every request.
The visitor points every field at it, ingests and searches; no request may carry a key.
"""

from __future__ import annotations

import json
import re

import pytest

from tests import servers
from tests.e2e.conftest import go, search, settle

pytestmark = pytest.mark.e2e
OPENAI_SECRET = "sk-operator-openai-4f1b9c"
QDRANT_SECRET = "qdrant-operator-key-77e2"


def embed(request: dict) -> servers.Reply:
    """Return small fixed vectors for an embedding request (OpenAI's or Ollama's), 404 for anything else."""
    if request["method"] != "POST":
        return servers.Reply({"status": {"error": "not a Qdrant server"}}, 404, content_type="application/json")
    texts = (request["json"] or {}).get("input") or []
    size = 1536 if request["path"].endswith("/embeddings") else 1024  # text-embedding-3-small, mxbai-embed-large
    vectors = [[float((len(t) * (j + 1)) % 7 + 1) for j in range(size)] for t in texts]
    if request["path"].endswith("/embeddings"):
        data = {"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]}
    elif request["path"].endswith("/api/embed"):
        data = {"embeddings": vectors}
    else:
        return servers.Reply({"status": {"error": "not found"}}, 404, content_type="application/json")
    return servers.Reply(data, content_type="application/json")


@pytest.fixture
def recorder():
    """A server that answers embedding requests with small fixed vectors and records each request."""
    with servers.recording(embed) as server:
        yield server


def fill(page, label: str, value: str) -> None:
    field = page.get_by_test_id("stSidebar").get_by_label(label, exact=True)
    field.fill(value)
    field.press("Enter")
    settle(page)


def test_no_key_reaches_an_address_typed_by_a_visitor(app_server, page, shot, recorder, shared_data, tmp_path):
    server = app_server(RAG_EMBEDDER="fake", RAG_UI_SETTINGS="1", OPENAI_API_KEY=OPENAI_SECRET,
                        QDRANT_API_KEY=QDRANT_SECRET, QDRANT_URL="http://127.0.0.1:9",
                        OPENAI_BASE_URL="http://127.0.0.1:9/v1", RAG_DATA_ROOT=str(tmp_path))
    page.goto(server.url)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Data location and servers", exact=True).click()
    fill(page, "Server URL", recorder.url)  # the operator's QDRANT_URL, replaced by the visitor's
    page.get_by_text(re.compile("Qdrant at .* answered 404")).first.wait_for()
    assert any(r["path"].startswith("/collections") for r in recorder.requests), "the app asked the recorder"
    shot("31-visitor-qdrant-url")

    sidebar.get_by_text("Embedded folder").click()
    settle(page)
    fill(page, "Ollama host", recorder.url)
    fill(page, "OpenAI-compatible base URL", recorder.url)
    sidebar.get_by_test_id("stSelectbox").filter(has_text="Embedder").click()
    page.get_by_role("option", name="openai:text-embedding-3-small").click()
    settle(page)

    page.locator("input[type=file]").set_input_files(str(shared_data / "pdfs" / "crazyones.pdf"))
    page.get_by_role("button", name=re.compile(r"Ingest 1 file")).click()
    page.get_by_text("1 of 1 file ingested.").wait_for(timeout=120_000)
    settle(page)
    go(page, "Search")
    search(page, "crazy ones")
    page.get_by_text(re.compile(r"hits? for")).wait_for()
    shot("32-visitor-search")

    embeddings = [r for r in recorder.requests if r["path"].endswith("/embeddings")]
    assert len(embeddings) >= 2, "ingest and search both embedded on the visitor's server"
    for request in recorder.requests:
        sent = json.dumps(request["headers"]) + request["raw"].decode("utf-8", "replace")
        assert OPENAI_SECRET not in sent and QDRANT_SECRET not in sent, request["path"]
        assert not {"authorization", "api-key"} & {name.lower() for name in request["headers"]}, request


def test_without_permission_a_visitor_sees_the_locations_but_cannot_change_them(app_server, page, shot):
    server = app_server(RAG_EMBEDDER="fake", OPENAI_API_KEY=OPENAI_SECRET)
    page.goto(server.url)
    page.get_by_test_id("stSidebar").get_by_text("Data location and servers", exact=True).click()
    page.get_by_text("Set by the operator").wait_for()
    sidebar = page.get_by_test_id("stSidebar")
    for label in ("Folder", "Server URL", "Ollama host", "OpenAI-compatible base URL", "OpenAI API key"):
        assert sidebar.get_by_label(label, exact=True).count() == 0, label
    assert OPENAI_SECRET not in page.content()
    shot("33-settings-read-only")
