"""Counts that must agree on a page (issue 34.8): the Chunks page's metric of chunks over the embedder's limit is
the number of rows its table flags, tables of contents too, and Live tuning says the same number."""

from __future__ import annotations

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.embeddings import get_embedder
from rag.embeddings.fake import FakeEmbedder
from rag.store.open import open_store
from tests.pages.conftest import start
from tests.pages.conftest import table as keyed_table
from ui import nav

TOC = "Inhalt\n" + "\n".join(f"{i}. Abschnitt über Thema {i} ........ {i + 2}" for i in range(1, 9))
BODY = "\n\n".join(f"{i}. Abschnitt\n\nDer Abschnitt {i} erklärt eine Regel kurz." for i in range(1, 9))


def test_the_chunks_metric_counts_every_chunk_the_table_flags_over_the_limit(app_env, monkeypatch):
    monkeypatch.setattr(FakeEmbedder, "max_input_tokens", 30)  # the table of contents is longer than this
    store = open_store(path=str(app_env / "qdrant"))
    pipeline.ingest([pipeline.SourceFile("regeln.txt", f"{TOC}\n\n{BODY}".encode())], "documents",
                    ChunkSettings(120, 0), get_embedder("fake"), store=store)
    store.close()
    at = start(nav.CHUNKS.path)
    table = keyed_table(at, "chunk_table").value
    flagged = table[table["flags"].str.contains("cut off")]
    assert len(flagged) >= 1 and flagged["flags"].str.contains("toc").any(), table[["flags", "model tokens"]]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["cut off"] == str(len(flagged))
    tuning = [d.value for d in at.dataframe if "" in d.value.columns and "over the embedder's limit" in
              list(d.value[""])]
    assert tuning, "Live tuning shows no comparison"
    row = tuning[0].set_index("").loc["over the embedder's limit"]
    assert row.iloc[0] == len(flagged)
