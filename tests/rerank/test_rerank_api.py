"""rag.rerank against a loopback stand-in /rerank server (real HTTP) in each dialect: request, order, scores,
errors, timeouts, and the key sent only to the URL configured beside it."""

from __future__ import annotations

import pytest

from rag.errors import (
    InvalidSettingsError,
    RerankerAuthError,
    RerankError,
    RerankerUnavailableError,
    UnknownRerankerError,
)
from rag.http import RetryPolicy
from rag.rerank import SCORE_KIND, get_reranker, rerank
from rag.retrieval.records import Hit
from tests.rerank.stand_in import RerankServer, overlap

pytestmark = pytest.mark.timeout(60)
NO_WAIT = RetryPolicy(retries=2, sleep=lambda seconds: None)
QUERY = "Kündigungsfrist des Mietvertrags"
TEXTS = ["Das Wetter ist schön.", "Die Kündigungsfrist beträgt drei Monate.", "Mietvertrags Kündigungsfrist: 3 Monate",
         "Nichts davon."]


def hits(texts=TEXTS) -> list[Hit]:
    return [Hit(1.0 / (n + 1), text, "doc", "doc.md", f"c{n}", n, (), None, None, None, None, score_kind="rrf")
            for n, text in enumerate(texts)]


@pytest.fixture
def server():
    stand_in = RerankServer()
    yield stand_in
    stand_in.close()


def make(dialect: str, server: RerankServer, **options):
    spec = f"tei:{server.url}" if dialect == "tei" else f"{dialect}:model-x"
    base = {"cohere": f"{server.url}/v2", "jina": f"{server.url}/v1"}.get(dialect)
    return get_reranker(spec, retry=NO_WAIT, **({"base_url": base} if base else {}), **options)


@pytest.mark.parametrize("dialect, path", [("tei", "/rerank"), ("cohere", "/v2/rerank"), ("jina", "/v1/rerank")])
def test_each_dialect_sends_its_request_and_the_hits_come_back_in_the_servers_order(server, dialect, path):
    reranked = rerank(QUERY, hits(), make(dialect, server), depth=10)
    request = server.requests[0]
    assert request["path"] == path and "authorization" not in {k.lower() for k in request["headers"]}
    if dialect == "tei":
        assert request["json"] == {"query": QUERY, "texts": TEXTS, "truncate": True}
    else:
        assert request["json"] == {"model": "model-x", "query": QUERY, "documents": TEXTS, "top_n": 4}
    assert [h.chunk_id for h in reranked] == ["c2", "c1", "c0", "c3"]  # best first; a tie keeps retrieval order
    assert [h.score for h in reranked] == [overlap(QUERY, TEXTS[2]), overlap(QUERY, TEXTS[1]), 0.0, 0.0]
    assert {h.score_kind for h in reranked} == {SCORE_KIND}
    assert [(h.retrieved_rank, h.retrieved_score) for h in reranked] == [(3, 1 / 3), (2, 1 / 2), (1, 1.0), (4, 1 / 4)]


def test_only_the_depth_is_sent_and_the_rest_follows_unscored(server):
    reranked = rerank(QUERY, hits(), make("tei", server), depth=2)
    assert server.texts_seen == [TEXTS[:2]]
    assert [h.chunk_id for h in reranked] == ["c1", "c0", "c2", "c3"]
    assert [h.score for h in reranked[2:]] == [None, None] and reranked[2].retrieved_rank == 3


def test_tei_gets_at_most_32_texts_per_request(server):
    many = [f"Text {n} Kündigungsfrist" if n == 40 else f"Text {n}" for n in range(45)]
    reranked = rerank(QUERY, hits(many), make("tei", server), depth=45)
    assert [len(texts) for texts in server.texts_seen] == [32, 13]
    assert reranked[0].chunk_id == "c40" and len(reranked) == 45


@pytest.mark.parametrize("dialect", ["tei", "cohere", "jina"])
@pytest.mark.parametrize("fault, error, words", [
    ("401", RerankerAuthError, "refused the request (HTTP 401"),
    ("500", RerankerUnavailableError, "kept failing with HTTP 500 (stand-in says 500) after 3 attempts"),
    ("not-json", RerankError, "not JSON: <html>login</html>"),
    ("short", RerankError, "3 results for 4 texts"),
    ("twice", RerankError, "indexes are not each of 0..3 once"),
    ("text-score", RerankError, "not a finite number"),
])
def test_a_failing_server_is_one_line_saying_what_happened(dialect, fault, error, words):
    server = RerankServer(fault)
    try:
        with pytest.raises(error) as raised:
            rerank(QUERY, hits(), make(dialect, server))
    finally:
        server.close()
    message = str(raised.value)
    assert words in message and "\n" not in message and "127.0.0.1" in message
    assert len(server.requests) == (3 if fault == "500" else 1)  # only a 5xx is tried again


def test_a_silent_server_times_out_after_rag_rerank_timeout_and_is_not_retried(monkeypatch):
    monkeypatch.setenv("RAG_RERANK_TIMEOUT", "0.3")
    server = RerankServer("silent")
    try:
        with pytest.raises(RerankerUnavailableError, match=r"did not answer within 0.3 s.*raise RAG_RERANK_TIMEOUT"):
            rerank(QUERY, hits(), make("tei", server))
        assert len(server.requests) == 1
    finally:
        server.close()


def test_a_server_that_is_down_is_retried_then_said(server):
    url = server.url
    server.close()
    with pytest.raises(RerankerUnavailableError, match=r"Could not reach .*3 attempts\)\. .*the URL after tei:"):
        rerank(QUERY, hits(), get_reranker(f"tei:{url}", retry=NO_WAIT))


@pytest.mark.slow
@pytest.mark.parametrize("dialect, url_variable, key_variable, suffix", [
    ("cohere", "COHERE_BASE_URL", "COHERE_API_KEY", "/v2"), ("jina", "JINA_BASE_URL", "JINA_API_KEY", "/v1"),
    ("tei", "TEI_URL", "TEI_API_KEY", "")])
def test_the_key_goes_only_to_the_url_configured_beside_it(server, monkeypatch, dialect, url_variable, key_variable,
                                                          suffix):
    other = RerankServer()
    try:
        monkeypatch.setenv(key_variable, "sk-geheim-12345")
        monkeypatch.setenv(url_variable, f"{server.url}{suffix}")
        rerank(QUERY, hits(), make(dialect, server))  # the configured URL: the key goes with it
        rerank(QUERY, hits(), make(dialect, other))  # another URL, given with no key: none goes
        assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-geheim-12345"
        assert not any(k.lower() == "authorization" for k in other.requests[0]["headers"])
        assert "sk-geheim" not in repr(make(dialect, server))
    finally:
        other.close()


def test_a_refused_key_is_never_shown(monkeypatch):
    server = RerankServer("403")
    try:
        monkeypatch.setenv("COHERE_BASE_URL", f"{server.url}/v2")
        monkeypatch.setenv("COHERE_API_KEY", "sk-geheim-12345")
        with pytest.raises(RerankerAuthError, match="RAG Lab sent the API key") as raised:
            rerank(QUERY, hits(), get_reranker("cohere:rerank-v3.5", retry=NO_WAIT))
        assert "geheim" not in str(raised.value)
    finally:
        server.close()


@pytest.mark.parametrize("spec, words", [("", "Unknown reranker"), ("bm25:x", "Unknown reranker"),
                                         ("cohere:", "needs a model name"), ("tei:", "needs a server URL"),
                                         ("tei:http://a\\b", "backslash")])
def test_a_malformed_spec_says_the_valid_forms(spec, words):
    with pytest.raises((UnknownRerankerError, InvalidSettingsError), match=words):
        get_reranker(spec)


def test_a_local_folder_outside_the_data_root_is_refused_and_a_missing_one_said(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    with pytest.raises(InvalidSettingsError, match="outside the data root"):
        get_reranker(f"local:{tmp_path}", root=root)
    with pytest.raises(RerankError, match="No cross-encoder folder"):
        get_reranker("local:models/none", root=root)


def test_a_depth_out_of_range_is_one_line(server):
    with pytest.raises(InvalidSettingsError, match="rerank depth must be a whole number from 1"):
        rerank(QUERY, hits(), make("tei", server), depth=0)
    assert server.requests == []
