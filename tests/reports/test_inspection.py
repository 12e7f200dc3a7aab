"""rag.reports.chunks: chunk statistics, flags, overlap spans, heading tree, scores per source, rebuilt documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag.chunking import tokens
from rag.chunking.chunker import Chunk, chunk_document
from rag.documents import samples
from rag.documents.loader import load_document
from rag.reports import chunks as chunk_report
from rag.reports import hits as hit_report
from rag.retrieval.records import Hit
from rag.store import rebuild


def hit(index: int, content: str = "text", *, score: float | None = None, document: str = "d1",
        path: tuple[str, ...] = ("A",), start: int | None = None, pages: tuple[int, int] = (1, 1),
        token_count: int | None = None) -> Hit:
    payload = {} if token_count is None else {"token_count": token_count}
    return Hit(score, content, document, f"{document}.pdf", f"{document}-{index}", index, path, pages[0], pages[1],
               start, None if start is None else start + len(content), payload)


@pytest.fixture(scope="module")
def hausarbeit(shared_data: Path):
    return load_document((shared_data / "pdfs/hausarbeit-jura.pdf").read_bytes(), "hausarbeit-jura.pdf")


# ---- statistics and flags --------------------------------------------------------------------------------


def test_chunk_stats_counts_and_over_size():
    stats = chunk_report.chunk_stats([10, 20, 30, 700], chunk_size=600)
    assert (stats.count, stats.total, stats.smallest, stats.largest, stats.over_size) == (4, 760, 10, 700, 1)
    assert stats.mean == 190 and stats.median == 25
    assert chunk_report.chunk_stats([]).count == 0


def test_token_count_prefers_the_stored_count_and_counts_otherwise():
    assert chunk_report.token_count(hit(0, "Hallo Welt", token_count=99)) == 99
    assert chunk_report.token_count(hit(0, "Hallo Welt")) == tokens.count("Hallo Welt") == 2


def test_reports_flag_cut_off_tiny_and_no_heading_and_measure_the_cut():
    chunks = [hit(0, "x " * 300, token_count=300), hit(1, "kurz", path=(), token_count=2)]
    reports = chunk_report.chunk_reports(chunks, model_tokens=[400, 3], max_input_tokens=256, chunk_size=600)
    assert reports[0].flags == ("cut off",) and reports[0].cut_tokens == 144
    assert reports[0].cut_share == pytest.approx(144 / 400)
    assert reports[1].flags == ("tiny", "no heading") and reports[1].cut_tokens == 0
    assert chunk_report.tiny_limit(600) == 30 and chunk_report.tiny_limit(None) == chunk_report.TINY_MIN_TOKENS


def test_flag_summary_suggests_a_chunk_size_that_fits_the_embedder():
    chunks = [hit(i, "x", token_count=n) for i, n in enumerate([600, 500, 100])]
    reports = chunk_report.chunk_reports(chunks, model_tokens=[900, 750, 150], max_input_tokens=256, chunk_size=600)
    summary = chunk_report.flag_summary(reports, 256)
    assert (summary.chunks, summary.cut, summary.tiny, summary.no_heading) == (3, 2, 0, 0)
    assert summary.suggested_chunk_size == 150  # 256 / 1.5 model tokens per cl100k token * 0.9, to tens
    assert chunk_report.flag_summary(reports[2:], 256).suggested_chunk_size is None


def test_a_table_of_contents_over_the_window_asks_for_no_other_chunk_size():
    # l2kurz at 350: text chunks take 0.9 model tokens per cl100k token, the table of contents 1.5 (347 -> 521)
    chunks = [hit(i, "x", token_count=350) for i in range(9)]
    toc = hit(9, "x", token_count=347)
    toc.payload["flags"] = ["toc"]
    reports = chunk_report.chunk_reports([*chunks, toc], [315] * 9 + [521], 512, 350, chunk_report.WINDOWED)
    summary = chunk_report.flag_summary(reports, 512)
    assert reports[-1].flags == ("windowed", "toc")  # the chunk itself still says what happens to it
    assert (summary.cut, summary.toc_cut, summary.suggested_chunk_size) == (0, 1, None)


def test_the_suggested_chunk_size_is_smaller_and_fits_every_searched_chunk():
    # mostly 0.9 model tokens per cl100k token, one dense chunk at 1.5: a median ratio would advise 510 > 350
    sizes, model = [350] * 9 + [347], [315] * 9 + [521]
    reports = chunk_report.chunk_reports([hit(i, "x", token_count=n) for i, n in enumerate(sizes)], model, 512, 350)
    summary = chunk_report.flag_summary(reports, 512)
    assert summary.cut == 1 and summary.suggested_chunk_size == 300  # 512 / 1.5 * 0.9 = 307, to tens
    worst = max(m / n for m, n in zip(model, sizes, strict=True))
    assert summary.suggested_chunk_size < min(r.tokens for r in reports if r.cut_tokens)
    assert summary.suggested_chunk_size * worst <= 512
    # a limit so small that the fitting size would hold hardly a sentence: no advice rather than a useless one
    tight = chunk_report.chunk_reports([hit(0, "x", token_count=400)], [2000], 64, 400)
    assert chunk_report.flag_summary(tight, 64).suggested_chunk_size is None


# ---- overlap and segments --------------------------------------------------------------------------------


def test_segments_and_overlap_spans_mark_text_shared_by_chunks():
    spans = [(0, 0, 10), (1, 6, 20), (2, 22, 30)]
    parts = chunk_report.segments(30, spans)
    assert [(p.start, p.end, p.chunks) for p in parts] == [
        (0, 6, (0,)), (6, 10, (0, 1)), (10, 20, (1,)), (20, 22, ()), (22, 30, (2,))
    ]
    assert chunk_report.overlap_spans(spans, 30) == [(6, 10)]


@given(st.lists(st.tuples(st.integers(0, 200), st.integers(1, 60)), max_size=25))
def test_segments_cover_the_text_once_and_know_every_covering_chunk(raw):
    spans = [(i, a, a + n) for i, (a, n) in enumerate(raw)]
    length = 260
    parts = chunk_report.segments(length, spans)
    assert parts[0].start == 0 and parts[-1].end == length
    assert all(p.end == q.start for p, q in zip(parts, parts[1:], strict=False))
    for part in parts:
        expected = tuple(sorted(i for i, a, b in spans if a <= part.start and part.end <= b))
        assert part.chunks == expected


def test_overlap_of_real_chunks_equals_what_consecutive_chunks_share(hausarbeit):
    chunks = chunk_document(hausarbeit, 600, 80, "tokens")
    spans = [(c.chunk_index, c.start, c.end) for c in chunks]
    shared = sum(max(0, a.end - b.start) for a, b in zip(chunks, chunks[1:], strict=False))
    assert sum(b - a for a, b in chunk_report.overlap_spans(spans, len(hausarbeit.text))) == shared > 0


# ---- heading tree ----------------------------------------------------------------------------------------


def test_heading_tree_nests_sections_in_document_order(hausarbeit):
    nodes = chunk_report.heading_tree(chunk_document(hausarbeit))
    titles = [(n.depth, n.title) for n in nodes]
    assert titles[:5] == [(0, chunk_report.NO_HEADING), (0, "Einleitung"), (0, "Verwendete Pakete"),
                          (0, "Klassenoptionen"), (1, "Schriftgrößen")]
    parent = next(n for n in nodes if n.title == "Klassenoptionen")
    children = [n for n in nodes if n.path[:1] == ("Klassenoptionen",) and n.depth == 1]
    assert set(parent.chunks) == {parent.chunks[0], *(i for c in children for i in c.chunks)}
    assert parent.page_start == 2 and parent.page_end == 3


def test_heading_tree_keeps_repeated_titles_apart():
    chunks = [hit(0, path=("Foo",)), hit(1, path=("Bar",)), hit(2, path=("Foo",)), hit(3, path=("Foo",))]
    assert [(n.title, n.chunks) for n in chunk_report.heading_tree(chunks)] == [
        ("Foo", (0,)), ("Bar", (1,)), ("Foo", (2, 3))
    ]


# ---- search helpers --------------------------------------------------------------------------------------


def test_source_scores_group_hits_per_document_with_best_mean_and_ranks():
    hits = [hit(0, score=0.9, document="a"), hit(1, score=0.5, document="b"), hit(2, score=0.7, document="a")]
    scores = hit_report.source_scores(hits)
    assert [(s.document_id, s.hits, s.ranks) for s in scores] == [("a", 2, (1, 3)), ("b", 1, (2,))]
    assert scores[0].best == 0.9 and scores[0].mean == pytest.approx(0.8)


def test_apply_threshold_says_what_it_removed_and_when_top_k_is_too_big():
    hits = [hit(0, score=0.8), hit(1, score=0.4)]
    outcome = hit_report.apply_threshold(hits, top_k=5, threshold=0.5)
    assert outcome.hits == hits[:1] and outcome.removed == hits[1:]
    assert "fewer than top_k = 5" in outcome.notes[0] and "removed 1 of 2" in outcome.notes[1]
    everything = hit_report.apply_threshold(hits, top_k=2, threshold=0.95)
    assert everything.hits == [] and everything.notes == (
        "The score threshold 0.95 removed all 2 hits; the best score was 0.800. Lower the threshold to see them.",
    )
    assert hit_report.apply_threshold(hits, top_k=2, threshold=None).notes == ()


def test_each_mode_has_its_score_scale_and_a_hybrid_hit_says_how_it_was_fused():
    """The rules the Search and Compare pages share live in rag.reports.hits, not in one page's part."""
    assert [hit_report.threshold_scale(mode, "rrf").name for mode in ("dense", "sparse", "hybrid")] == [
        "cosine", "BM25", "RRF"]
    assert hit_report.threshold_scale("hybrid", "convex").maximum == 1.0
    assert hit_report.threshold_scale("sparse", "rrf").maximum is None  # BM25 has no upper bound
    fused = Hit(0.75, "Passwörter werden gehasht.", "d1", "d1.pdf", "d1-0", 0, ("A",), 1, 1, None, None,
                score_kind="rrf", dense_rank=1, dense_score=0.8, sparse_rank=3, sparse_score=2.5)
    words = hit_report.explanation(fused, "Passwörter", 20)
    assert "dense list: cosine 0.800, rank 1" in words and "keyword list: BM25 2.50, rank 3" in words
    assert "fused (RRF): 1/2 + 1/4 = 0.750" in words
    alone = Hit(0.5, "x", "d1", "d1.pdf", "d1-1", 1, (), 1, 1, None, None, score_kind="rrf", dense_rank=1,
                dense_score=0.8)
    assert "keyword list: not in its top 20" in hit_report.explanation(alone, "", 20)


def test_neighbours_are_the_chunks_around_an_index():
    chunks = [hit(i) for i in range(5)]
    before, after = hit_report.neighbours(chunks, 2)
    assert [c.chunk_index for c in before] == [1] and [c.chunk_index for c in after] == [3]
    assert hit_report.neighbours(chunks, 0)[0] == [] and hit_report.neighbours(chunks, 4)[1] == []


# ---- rebuilt documents -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["pdfs/hausarbeit-jura.pdf", "pdfs/pdflatex-outline.pdf",
                                  "markdown/asvs-de-V2-Authentication.md"])
def test_a_document_rebuilt_from_its_chunks_rechunks_like_the_original(shared_data, name):
    original = load_document((shared_data / name).read_bytes(), Path(name).name)
    stored = chunk_document(original)
    rebuilt = rebuild.document_from_chunks(original.id, original.title, stored)
    assert len(rebuilt.text) == len(original.text)
    assert rebuilt.page_starts == original.page_starts
    for chunk in stored:
        assert rebuilt.text[chunk.start : chunk.end] == chunk.content
    for size, overlap in [(600, 80), (300, 30), (1000, 0)]:
        expected = [_shape(c) for c in chunk_document(original, size, overlap)]
        assert [_shape(c) for c in chunk_document(rebuilt, size, overlap)] == expected


def _shape(chunk: Chunk) -> tuple:
    return chunk.start, chunk.end, chunk.heading_path, chunk.page_start, chunk.page_end, chunk.token_count


def test_chunks_without_offsets_are_laid_end_to_end():
    chunks = [hit(0, "Erster Teil."), hit(1, "Zweiter Teil.", path=("B",))]
    document = rebuild.document_from_chunks("x", "x.txt", chunks)
    assert document.text == "Erster Teil.\n\nZweiter Teil."
    assert [(h.title, h.start) for h in document.headings] == [("A", 0), ("B", 14)]


# ---- samples and separators ------------------------------------------------------------------------------


def test_sample_files_are_found_recursively_without_license_files(tmp_path):
    (tmp_path / "sub").mkdir()
    names = ("a.pdf", "sub/b.md", "sub/c.txt", "LICENSE.md", "sub/LICENSE-ASVS.md", "README.md", "d.json", "e.docx")
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    assert [f.name for f in samples.sample_files(tmp_path)] == ["a.pdf", "b.md", "c.txt"]


def test_unread_start_is_the_last_word_start_the_model_still_reads():
    from rag.embeddings import get_embedder

    model = get_embedder("fake:8")
    model.max_input_tokens = 30
    text = " ".join(f"Wort{n}" for n in range(200))
    offset = chunk_report.unread_start(text, model)
    assert offset is not None and text[offset - 1] == " "
    assert model.count_tokens(text[:offset].rstrip()) <= 30 < model.count_tokens(text[: text.index(" ", offset)])
    assert chunk_report.unread_start("Kurz.", model) is None
    model.windowed = True  # a model that reads long chunks in windows reads everything
    assert chunk_report.unread_start(text, model) is None


def test_unread_text_is_struck_through_only_where_no_chunk_reads_it():
    from ui import render

    text = "aaaa bbbb cccc dddd"
    parts = chunk_report.segments(len(text), [(0, 0, 14), (1, 10, 19)])
    html = render.chunked_text_html(text, parts, 0, 1, {0: 5, 1: 15})
    assert '<span class="rl-cut" title="the model never reads this">bbbb </span>' in html  # chunk 0 stops at 5
    assert '<mark class="rl-overlap" title="overlap of chunks #0, #1">cccc</mark>' in html  # chunk 1 reads it
    assert '<span class="rl-cut" title="the model never reads this">dddd</span>' in html
