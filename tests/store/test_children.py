"""Parent–child retrieval: children cut inside their parent, searched in its place, returned as one parent per hit;
deleted and replaced with their parents (also after kill -9); collections without children searched as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qdrant_client import models

from rag import pipeline
from rag.chunking import children, tokens
from rag.chunking.chunker import ChunkSettings
from rag.documents.loader import SourceFile
from rag.embeddings.fake import FakeEmbedder
from rag.errors import InvalidSettingsError
from rag.retrieval import SearchRequest
from rag.store.children import IS_CHILD
from rag.store.open import open_store
from tests.store.test_crash_safety import kill_while_storing, rag

GUIDE = ("# Haltung\n\nZebrafinken leben gern in Gruppen. Sie brauchen eine große Voliere.\n\n## Futter\n\n"
         + " ".join(f"Die Vögel fressen Hirse und Keimfutter der Sorte {i}." for i in range(40))
         + "\n\n## Wasser\n\nFrisches Wasser gibt es jeden Morgen in einer flachen Schale. Das Bad mögen sie.\n")
FILE = SourceFile("ratgeber.md", GUIDE.encode())
QUERY = "frisches Wasser flache Schale Hirse"
MODES = [("dense", None), ("sparse", None), ("hybrid", "convex"), ("hybrid", "rrf"), ("hybrid", "dbsf")]


@pytest.fixture
def store(tmp_path):
    opened = open_store(path=str(tmp_path / "qdrant"))  # the real embedded engine (Qdrant Edge)
    yield opened
    opened.close()


def every_point(store, collection: str) -> list:
    return [p for p in store._scroll(collection, None, True, children=True)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["Ein Satz.", "Noch einer!", "Wort", "langes Kompositum", "\n\n", "\n", " ", "Ende?"]),
                min_size=1, max_size=60), st.sampled_from([8, 12, 30]))
def test_children_are_spans_of_their_parent_in_order_and_cover_it(parts, size):
    text = " ".join(parts)
    spans = children.cut(text, size)
    assert spans and all(0 <= a < b <= len(text) or (a, b) == (0, len(text)) for a, b in spans)
    assert all(b1 <= a2 for (_, b1), (a2, _) in zip(spans, spans[1:], strict=False))  # ordered, never overlapping
    covered = "".join(text[a:b] for a, b in spans)
    assert "".join(covered.split()) == "".join(text.split())  # only whitespace is left between children
    assert all(tokens.count(text[a:b]) <= size or len(text[a:b].split()) <= 1 for a, b in spans)


def test_children_end_at_sentence_ends():
    text = "Erster Satz mit einigen Wörtern. Zweiter Satz, etwas länger als der erste. Dritter.\n\nNeuer Absatz."
    spans = children.cut(text, 14)
    assert len(spans) > 1 and text[spans[-1][0]:spans[-1][1]].endswith("Neuer Absatz.")
    assert all(text[a:b][-1] in ".!?" for a, b in spans)


def test_child_size_is_checked():
    assert children.parse_child_size("64") == 64 and children.parse_child_size("off") == 0
    for bad in ("3", "-5", "viel"):
        with pytest.raises(InvalidSettingsError):
            children.parse_child_size(bad)


def test_a_chunk_that_fits_in_one_child_has_none(store):
    embedder = FakeEmbedder(32)
    [result] = pipeline.ingest([FILE], "pc", ChunkSettings(60, 0), embedder, store=store, child_size=30)
    chunks = store.document_chunks("pc", result.document_id)
    small = [c for c in chunks if tokens.count(c.content) <= 30]
    big = [c for c in chunks if tokens.count(c.content) > 30]
    assert small and big  # the guide has both: short sections and a long one
    kids = [p.payload for p in every_point(store, "pc") if "child" in (p.payload or {}).get("flags", [])]
    with_kids = {k["chunk_index"] for k in kids}
    assert with_kids == {c.chunk_index for c in big}  # no chunk is embedded twice as its own only child
    assert all(len([k for k in kids if k["chunk_index"] == c.chunk_index]) > 1 for c in big)
    hits = pipeline.search("große Voliere Gruppen", "pc", SearchRequest(top_k=3, mode="sparse"), store=store,
                           embedder=embedder)
    assert hits and "Voliere" in hits[0].content and hits[0].child.index is None  # found as itself


def test_a_hybrid_hit_found_through_a_child_shows_the_ranks_that_were_fused(store):
    embedder = FakeEmbedder(32)
    pipeline.ingest([FILE], "pc", ChunkSettings(60, 0), embedder, store=store, child_size=12)
    hits = pipeline.search(QUERY, "pc", SearchRequest(top_k=6, mode="hybrid", fusion="rrf"), store=store,
                           embedder=embedder)
    through_children = [h for h in hits if h.child is not None and h.child.index is not None]
    assert through_children and all(h.dense_rank or h.sparse_rank for h in hits)
    for hit in hits:  # Qdrant's RRF: 1 / (k + rank - 1), k = 2, over the points (chunks and children) it fused
        fused = sum(1 / (rank + 1) for rank in (hit.dense_rank, hit.sparse_rank) if rank is not None)
        assert hit.score == pytest.approx(fused), (hit.chunk_index, hit.dense_rank, hit.sparse_rank, hit.child)


@pytest.mark.parametrize(("mode", "fusion"), MODES)
def test_one_parent_per_hit_with_its_best_child_inside_it(store, mode, fusion):
    embedder = FakeEmbedder(32)
    [result] = pipeline.ingest([FILE], "pc", ChunkSettings(60, 0), embedder, store=store, child_size=12)
    assert result.ok and result.chunks == len(store.document_chunks("pc", result.document_id))
    hits = pipeline.search(QUERY, "pc", SearchRequest(top_k=5, mode=mode, fusion=fusion), store=store,
                           embedder=embedder)
    assert len(hits) == 5 and len({h.chunk_id for h in hits}) == 5  # each parent once
    assert "Frisches Wasser" in hits[0].content
    chunks = {c.chunk_id: c for c in store.document_chunks("pc", result.document_id)}
    for hit in hits:
        assert hit.chunk_id in chunks and hit.content == chunks[hit.chunk_id].content  # the parent, whole
        child = hit.child
        assert child is not None and 0 <= child.start < child.end <= len(hit.content)
        assert hit.content[child.start:child.end].strip()
    assert [h.child.rank for h in hits] == sorted(h.child.rank for h in hits)  # parents in their best child's order
    if mode != "hybrid" or fusion != "dbsf":
        assert [h.score for h in hits] == [h.child.score for h in hits]  # each parent at its best child's score
    # a larger top_k only reads further down the same ranking
    more = pipeline.search(QUERY, "pc", SearchRequest(top_k=8, mode=mode, fusion=fusion), store=store,
                           embedder=embedder)
    assert [h.chunk_id for h in more[:5]] == [h.chunk_id for h in hits]


def test_children_are_deleted_and_replaced_with_their_parents(store):
    embedder = FakeEmbedder(32)
    [first] = pipeline.ingest([FILE], "pc", ChunkSettings(60, 0), embedder, store=store, child_size=12)
    kids = [p for p in every_point(store, "pc") if "child" in (p.payload or {}).get("flags", [])]
    assert len(kids) > first.chunks
    [again] = pipeline.ingest([FILE], "pc", ChunkSettings(40, 0), embedder, store=store)  # replaced: other settings
    points = every_point(store, "pc")
    parents = {str(p.id) for p in points if "child" not in (p.payload or {}).get("flags", [])}
    kids = [p for p in points if "child" in (p.payload or {}).get("flags", [])]
    assert len(parents) == again.chunks and kids and all(p.payload["parent_id"] in parents for p in kids)
    assert {p.payload["generation"] for p in points} == {store.documents("pc")[0].generation}
    store.delete_document("pc", again.document_id)
    assert every_point(store, "pc") == []
    assert pipeline.search("Wasser", "pc", SearchRequest(top_k=5, mode="sparse"), store=store, embedder=embedder) == []


def test_a_collection_keeps_its_child_size(store):
    embedder = FakeEmbedder(32)
    pipeline.ingest([FILE], "pc", ChunkSettings(60, 0), embedder, store=store, child_size=12)
    assert store.collections()[0].child_size == 12 and store.collections()[0].points == store.documents("pc")[0].chunks
    other = SourceFile("zwei.md", b"# Zwei\n\nEin anderer Text ueber Wellensittiche.\n")
    [result] = pipeline.ingest([other], "pc", ChunkSettings(60, 0), embedder, store=store)  # None: the collection's
    assert result.ok
    with pytest.raises(InvalidSettingsError, match="child size 12"):
        pipeline.ingest([other], "pc", ChunkSettings(60, 0), embedder, store=store, child_size=32)


def test_a_collection_without_children_is_searched_as_before(store):
    embedder = FakeEmbedder(32)
    pipeline.ingest([FILE], "plain", ChunkSettings(60, 0), embedder, store=store, child_size=0)  # off (default 128)
    layout = store._layout("plain")
    assert layout.child_size == 0 and "child_size" not in layout.meta
    assert store.search_filter(layout, None) is None or IS_CHILD not in (store.search_filter(layout, None).must or [])
    query = "frisches Wasser flache Schale"
    vector = embedder.embed_query([query])[0]
    hits = pipeline.search(query, "plain", SearchRequest(top_k=7, mode="dense"), store=store, embedder=embedder)
    engine = store.client.query_points("plain", query=vector.tolist(), using=layout.vector, limit=7).points
    assert [h.chunk_id for h in hits] == [str(p.id) for p in engine]  # the engine's own ranking, untouched
    assert [h.score for h in hits] == pytest.approx([p.score for p in engine])
    assert all(h.child is None for h in hits)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_no_orphan_child_after_a_killed_ingest(tmp_path: Path):
    folder = tmp_path / "qdrant"
    big = tmp_path / "vertrag.txt"
    big.write_text("\n\n".join(f"Abschnitt {n}: Die Kündigungsfrist beträgt drei Monate zum Quartalsende. "
                               f"Die Kündigung muss schriftlich erfolgen." for n in range(700)), encoding="utf-8")
    other = tmp_path / "andere.md"
    other.write_text("# Andere\n\nDie Kündigungsfrist eines Mietvertrags ist anders geregelt.\n", encoding="utf-8")
    rag(folder, "ingest", str(other), "--embedder", "fake", "--child-size", "8")
    kill_while_storing(folder, big)  # the collection's child size (8) applies: children are written too
    found = json.loads(rag(folder, "search", "Kündigungsfrist Quartalsende", "--top-k", "50", "--json", "--mode",
                           "sparse").stdout)["hits"]
    assert [h["document_title"] for h in found] == ["andere.md"] and found[0]["child"]["span"][1] > 0
    opened = open_store(path=str(folder))
    try:
        hidden = opened.hidden_generations("documents")
        kids = [p for p in every_point(opened, "documents") if "child" in (p.payload or {}).get("flags", [])]
        assert hidden and any(p.payload["generation"] in hidden for p in kids)  # written, but hidden
    finally:
        opened.close()
    rag(folder, "delete", "--collection", "documents", "--document",
        next(d for d in json.loads(rag(folder, "documents", "--json").stdout) if d["title"] == "vertrag.txt")
        ["document_id"][:12])
    opened = open_store(path=str(folder))
    try:
        parents = {str(p.id) for p in every_point(opened, "documents") if "child" not in p.payload.get("flags", [])}
        kids = [p for p in every_point(opened, "documents") if "child" in (p.payload or {}).get("flags", [])]
        assert kids and all(p.payload["parent_id"] in parents for p in kids)  # only andere.md's, none orphaned
        flt = models.Filter(must=[IS_CHILD])
        assert opened.client.count("documents", count_filter=flt).count == len(kids)
    finally:
        opened.close()


def test_why_not_this_one_names_the_child_that_placed_the_chunk(store):
    from rag.cli.explain import stage_rows
    from rag.evaluation.funnel.stages import explain_chunk
    from rag.evaluation.metrics.modes import SearchMode

    embedder = FakeEmbedder(32)
    pipeline.ingest([FILE], "pc", ChunkSettings(60, 0), embedder, store=store, child_size=12)
    [hit] = pipeline.search(QUERY, "pc", SearchRequest(top_k=1, mode="hybrid", fusion="convex"), store=store,
                            embedder=embedder)
    explained = explain_chunk(QUERY, hit, "pc", SearchMode("hybrid", "convex").request(3), store=store,
                              embedder=embedder)
    fused = explained.to_json()["stages"]["fused"]
    assert fused["rank"] == 1 and fused["child"]["rank"] == hit.child.rank and "span" in fused["child"]
    notes = [row[3] for row in stage_rows(explained.stages, explained.mode)]
    assert any("among chunks and children" in note for note in notes)
