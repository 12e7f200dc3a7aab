"""Names users choose (collections) are text on every label: Markdown in them never renders (AppTest)."""

from __future__ import annotations

from rag import pipeline
from rag.embeddings.fake import FakeEmbedder
from rag.store.open import open_store
from tests.pages.conftest import start

NAME = "sweep-[klick](x)-y"


def test_a_sweep_collection_named_like_a_link_is_shown_as_text_in_the_library(app_env):
    store = open_store(path=str(app_env / "qdrant"))
    pipeline.ingest([pipeline.SourceFile("a.md", b"# Titel\n\nEin kurzer Absatz.\n")], NAME,
                    embedder=FakeEmbedder(), store=store)
    store.close()
    at = start("app_pages/library.py")
    labels = [p.proto.popover.label for p in at.get("popover")] + [e.label for e in at.expander]
    shown = [label for label in labels if "klick" in label]
    assert shown, labels
    assert all(r"\[klick\]\(x\)" in label for label in shown), shown
    assert "[klick](x)" not in " ".join(str(m.value) for m in at.markdown)
