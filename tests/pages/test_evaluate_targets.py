"""Issue 39, items 1 and 2: after a new sweep every selector over the result is a new widget (the browser never
shows a row of the run before), and "Use this configuration" and the fusion tuning aim at the collection the
sweep measured, not at the sidebar's; writing into another collection takes a confirmation naming it."""

from __future__ import annotations

import json

import pytest

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.embeddings import get_embedder
from rag.evaluation.querysets.squad import import_squad
from rag.store.open import open_store
from tests.pages.conftest import plain, settled
from tests.pages.test_evaluate_page import evaluate_page, sample_articles, set_grid
from ui.state import result_key

# the widgets that show a choice on the result: by label (three selectors are "Configuration and mode")
ON_RESULT = {"selectbox": ("Metric", "k", "Configuration and mode", "Not in the top k", "Top k given to the context",
                           "Row"),
             "number_input": ("Threshold line",), "text_input": ("Into collection",)}


def on_result(at) -> list:
    """Return the widgets of the page that show a choice on its result, in page order."""
    return [w for kind, labels in ON_RESULT.items() for w in at.get(kind) if w.label in labels]


@pytest.fixture
def env(sweep_env):
    return sweep_env


@pytest.mark.slow
def test_a_second_sweep_draws_every_selector_over_its_result_afresh_within_its_options(env):
    at = evaluate_page()
    sample_articles(at, 2)
    set_grid(at, "500,120", "0", "1,5", modes=["dense", "sparse"])
    first = {w.id for w in on_result(at)}
    assert len(first) == 11, [w.label for w in on_result(at)]
    sample_articles(at, 1)  # other documents, another grid
    set_grid(at, "300,350", "0,50", "1,3", modes=["dense", "sparse"])
    assert not at.error, [e.value for e in at.error]
    result = at.session_state["evaluate_result"]
    labels = [r.label for r in result.results]
    assert all(label.startswith(("chunk_size 300,", "chunk_size 350,")) for label in labels), labels
    widgets = on_result(at)
    # a widget keeps its value in the browser while its id stays: the id must name the new result
    assert len(widgets) == 11 and not first & {w.id for w in widgets}, [w.label for w in widgets]
    rows = [w for w in widgets if w.label in ("Configuration and mode", "Row")]
    assert len(rows) == 5 and all(w.value == result.best().label and w.options == labels for w in rows)
    ks = [w for w in widgets if w.label in ("k", "Not in the top k", "Top k given to the context")]
    assert len(ks) == 3 and all(w.value in result.ks and w.options == ["1", "3"] for w in ks)


def two_collections(env) -> list[dict]:
    """Store 'documents' (two XQuAD articles) and 'handbuecher' (a third one); return the articles' questions."""
    store = open_store(path=str(env / "qdrant"))
    imported = import_squad((env / "samples/xquad.json").read_bytes(), articles=3)
    files = [pipeline.SourceFile(d.filename, d.text.encode()) for d in imported.documents]
    embedder = get_embedder("fake:32")
    pipeline.ingest(files[:2], "documents", ChunkSettings(300, 30), embedder, store=store)
    pipeline.ingest(files[2:], "handbuecher", ChunkSettings(300, 30), embedder, store=store)
    store.close()
    titles = {d.filename for d in imported.documents[:2]}
    return [q for q in imported.queries if q["document"] in titles][:20]


def sweep_on_documents(env):
    """Run a sweep on the collection 'documents' while the sidebar shows 'handbuecher'; return the page."""
    queries = two_collections(env)
    at = evaluate_page()
    at.selectbox(key="collection_choice").set_value("handbuecher").run()  # the sidebar shows the handbook
    lines = "\n".join(json.dumps(q, ensure_ascii=False) for q in queries).encode()
    at.file_uploader(key="evaluate_query_file").upload("fragen.jsonl", lines, "application/json")
    at.run()
    at.radio(key="evaluate_documents_from").set_value("A collection")
    at.run()
    at.selectbox(key="evaluate_collection").set_value("documents")
    set_grid(at, "200,300", "30", "1,5", modes=["dense", "hybrid-convex"])
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["evaluate_result"].collection == "documents"
    assert at.selectbox(key="collection_choice").value == "handbuecher"
    return at


@pytest.mark.slow
def test_use_this_configuration_aims_at_the_measured_collection_and_another_needs_a_confirmation(env):
    at = sweep_on_documents(env)
    result = at.session_state["evaluate_result"]
    target = at.text_input(key=result_key("apply_collection", result))
    assert target.value == "documents"  # not the sidebar's 'handbuecher'
    assert not at.button(key="apply_configuration").disabled and not at.checkbox
    target.set_value("handbuecher").run()
    button = at.button(key="apply_configuration")
    [sure] = [c for c in at.checkbox if "handbuecher" in plain(c.label)]
    assert button.disabled and not sure.value
    words = plain(sure.label)
    assert words == ("Yes, write the sweep's 2 documents into 'handbuecher' (which holds 1 document and is not the "
                     f"collection the sweep measured) and make {result.best().mode.label} search its default")
    sure.check().run()
    assert not at.button(key="apply_configuration").disabled
    settled(at.button(key="apply_configuration").click())  # the explicit choice is honoured
    assert not at.error, [e.value for e in at.error]
    store = open_store(path=str(env / "qdrant"))
    assert store.collection_setting("handbuecher", "run") is not None
    assert len(store.documents("handbuecher")) == 3
    store.close()


@pytest.mark.slow
def test_tuning_the_fusion_aims_at_the_collection_evaluated_not_the_sidebars(env):
    at = sweep_on_documents(env)
    labels = [b.label for b in at.button]
    assert "Tune on 'documents'" in labels and not [label for label in labels if "handbuecher" in label], labels
    next(b for b in at.button if b.label == "Tune on 'documents'").click().run()
    saving = [b for b in at.button if b.label.startswith("Save ")]
    assert len(saving) == 1 and saving[0].label.endswith("as the fusion of 'documents'")
