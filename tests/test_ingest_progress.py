"""An ingest's progress events (rag.pipeline.ingest): a file's counts never pass its total, which is the document's
chunk count from its first embedding event on; the time left covers every queued file (rag.embeddings.pace),
planned by pages or bytes until each is chunked."""

from __future__ import annotations

import time

import pytest
from qdrant_client import models

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.documents.loader import SourceFile, expected_size
from rag.embeddings import get_embedder
from rag.embeddings.pace import CHARS_PER, Pace
from rag.ingested import IngestOptions, Watch
from rag.store.children import IS_CHILD
from tests.conftest import make_pdf

SENTENCE = "Die Kündigungsfrist {n} beträgt drei Monate zum Quartalsende, schriftlich beim Amt {n} einzureichen. "


class Steady:
    """The fake embedder at a steady pace: a millisecond per 40 characters (a model whose rate does not change)."""

    def __init__(self):
        self.inner = get_embedder("fake:16")

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed_documents(self, texts):
        time.sleep(sum(map(len, texts)) / 40_000)
        return self.inner.embed_documents(texts)


def text_file(name: str, sentences: int) -> SourceFile:
    return SourceFile(name, "".join(SENTENCE.format(n=f"{name}-{n}") for n in range(sentences)).encode())


@pytest.mark.slow
def test_a_files_counts_never_pass_its_total_which_is_its_chunk_count_from_the_start(shared_data, store):
    pdf = make_pdf([[f"Abschnitt {p}.{n}: Die Frist beträgt drei Monate." for n in range(30)] for p in range(4)])
    files = [text_file("kurz.txt", 20), SourceFile("lang.pdf", pdf), text_file("mittel.md", 200)]
    events = []
    results = pipeline.ingest(files, "c", ChunkSettings(60, 10), Steady(), store=store,  # chunks only: with children,
                              options=IngestOptions(child_size=0),  # embed counts chunks and children
                              watch=Watch(progress=events.append))
    assert all(r.ok for r in results)
    for index, result in enumerate(results):
        mine = [e for e in events if e.file_index == index]
        counted = [e for e in mine if e.stage in ("embed", "store", "done")]
        assert counted and all(0 <= e.done <= e.total for e in mine), [(e.stage, e.done, e.total) for e in mine]
        assert {e.total for e in counted} == {result.chunks}, [(e.stage, e.done, e.total) for e in counted]
        embeds = [e.done for e in mine if e.stage == "embed"]
        assert embeds[0] == 0 and embeds[-1] == result.chunks and embeds == sorted(embeds)


@pytest.mark.slow
def test_the_time_left_covers_every_queued_file_from_the_first_estimate_on(store):
    files = [text_file(f"teil-{n}.txt", 120) for n in range(5)]  # about 13,000 characters each
    events: list[tuple[float, pipeline.Progress]] = []
    pipeline.ingest(files, "c", ChunkSettings(80, 10), Steady(), store=store, options=IngestOptions(child_size=0),
                    watch=Watch(progress=lambda e: events.append((time.perf_counter(), e))))
    end = time.perf_counter()
    first = next((at, e) for at, e in events if e.seconds_left)
    assert first[1].file_index == 0  # estimated while the first file embeds
    actual = end - first[0]
    assert 0.5 * actual < first[1].seconds_left < 2.0 * actual, (first[1].seconds_left, actual)
    halfway = next((at, e) for at, e in events if e.file_index == 2 and e.stage == "embed" and e.seconds_left)
    assert 0.5 * (end - halfway[0]) < halfway[1].seconds_left < 2.0 * (end - halfway[0])


def test_a_pdf_not_read_yet_is_planned_by_its_pages_a_text_file_by_its_bytes():
    pdf = make_pdf([["Eine Zeile."]] * 7)
    assert expected_size(SourceFile("a.pdf", pdf)) == ("pages", 7.0)
    assert expected_size(SourceFile("b.md", b"x" * 500)) == ("bytes", 500.0)
    assert expected_size(SourceFile("kaputt.pdf", b"%PDF-1.4 kaputt")) == ("bytes", 15.0)
    pace = Pace([(0, 0)] * 4, [0] * 4, [])
    sizes = [("pages", 10.0), ("bytes", 1000.0), ("pages", 20.0), ("bytes", 3000.0)]
    pace.plan_rest(sizes, -1)  # nothing read yet: the defaults per unit
    assert pace.embed_left == [round(CHARS_PER["pages"] * 10), round(CHARS_PER["bytes"] * 1000),
                               round(CHARS_PER["pages"] * 20), round(CHARS_PER["bytes"] * 3000)]
    pace.plan(0, 30, 12_000, 12_000)  # the first PDF held 1,200 characters per page
    pace.plan_rest(sizes, 0)
    assert pace.embed_left[2] == 24_000 and pace.embed_left[3] == round(CHARS_PER["bytes"] * 3000)


def test_with_children_a_files_counts_name_its_chunks_and_children_apart(store):
    events = []
    [result] = pipeline.ingest([text_file("lang.txt", 60)], "c", ChunkSettings(120, 0), get_embedder("fake:16"),
                               store=store, options=IngestOptions(child_size=32), watch=Watch(progress=events.append))
    assert result.ok
    kids = store.client.count("c", count_filter=models.Filter(must=[IS_CHILD]), exact=True).count
    assert kids > result.chunks > 1  # each chunk of 120 tokens has several children of 32
    working = [e for e in events if e.stage in ("embed", "store")]
    assert working and {(e.total, e.children) for e in working} == {(result.chunks + kids, kids)}
    assert [e.total for e in events if e.stage == "done"] == [result.chunks]
