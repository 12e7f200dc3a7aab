"""The collection picker and the Library's selections: chosen by name, never by a label; what was deleted falls
back to what exists (with a toast); a new session opens the last used or the largest collection; a job that ends
selects what it wrote; a delete leaves no selection pointing at another row. Forms keep their values for the
session, counts read "1 document", and tables show the informative end of a heading path."""

from __future__ import annotations

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState

from rag import pipeline
from rag.chunking import ChunkSettings
from rag.documents import SourceFile
from rag.embeddings import get_embedder
from rag.store.open import open_store
from tests.pages.conftest import PDF, button, plain, select, settled, start, table, texts, upload
from tests.pages.test_jobs import Gated
from ui import jobs, nav, resources
from ui.sidebar import NEW

TEXTS = {
    "alpha.md": "# Alpha\n\nDie Kündigungsfrist beträgt drei Monate zum Quartalsende.\n",
    "beta.md": "# Beta\n\nDer Vermieter trägt die Kosten der Instandhaltung.\n",
    "gamma.md": "# Gamma\n\nDie Mietkaution ist auf einem Treuhandkonto anzulegen.\n",
}
DEEP = ("# Handbuch\n\n## Kapitel 2\n\n### Auftragsklärung\n\n"
        + "Die Auftragsklärung legt Ziel, Umfang und Termine des Projekts fest. " * 6 + "\n")


def ingest(at, names: dict[str, str], into: str | None = None):
    """Ingest Markdown texts on the Upload page, into the sidebar's collection or into a new one (into)."""
    at.switch_page(nav.UPLOAD.path).run()
    if into is not None:
        at.selectbox(key="upload_target").set_value(NEW).run()
        at.text_input(key="upload_new_target").set_value(into).run()
    at.file_uploader[0].set_value([(name, text.encode(), "text/markdown") for name, text in names.items()])
    at.run()
    settled(button(at, "Ingest").click())
    assert not at.exception, at.exception
    return at


def picker(at):
    return at.sidebar.selectbox(key="collection_choice")


def select_row(at, row: int):
    frame = table(at, "library_table").value
    select(at, "library_table", row)
    assert not at.exception, at.exception
    return frame.iloc[row]["document"]


def store_of(app_env):
    return open_store(path=str(app_env / "qdrant"))


def ingest_outside(app_env, collection: str, names: dict[str, str]) -> None:
    """Fill a collection as another process (or an earlier run of the app) would: no session remembers it."""
    files = [SourceFile(name, text.encode()) for name, text in names.items()]
    results = pipeline.ingest(files, collection, ChunkSettings(), get_embedder("fake"), store=store_of(app_env))
    assert all(r.ok for r in results)
    resources.store_changed()


# ---- 1. deleting in the Library -----------------------------------------------------------------------------


def test_deleting_the_last_row_clears_the_selection_instead_of_crashing(app_env):
    at = ingest(start(), TEXTS)
    at.switch_page(nav.LIBRARY.path).run()
    title = select_row(at, 2)
    assert button(at, f"Show the chunks of {title}")
    button(at, "Yes, delete the document").click().run()
    assert not at.exception, at.exception  # main: IndexError, the selection kept the old row index
    assert title not in set(at.dataframe[0].value["document"]) and len(at.dataframe[0].value) == 2
    assert "Select a row to open or delete that document." in texts(at.caption)
    assert not [b for b in at.button if plain(b.label).startswith("Show the chunks of")]


def test_deleting_a_middle_row_selects_no_other_document(app_env):
    at = ingest(start(), TEXTS)
    at.switch_page(nav.LIBRARY.path).run()
    select_row(at, 0)
    button(at, "Yes, delete the document").click().run()
    assert not at.exception, at.exception
    assert len(at.dataframe[0].value) == 2
    assert not [b for b in at.button if plain(b.label).startswith("Show the chunks of")], "another row got selected"
    assert "Select a row to open or delete that document." in texts(at.caption)


def test_a_chunk_selection_does_not_outlive_the_rows_it_was_made_on(app_env, shared_data):
    at = upload(start(), shared_data, PDF)
    at.switch_page(nav.CHUNKS.path).run()
    rows = len(table(at, "chunk_table").value)
    select(at, "chunk_table", rows - 1)
    assert not at.exception, at.exception
    at.toggle(key="only_flagged").set_value(True).run()  # fewer rows: the last one's index points nowhere
    assert not at.exception, at.exception  # main: IndexError
    assert len(table(at, "chunk_table").value) < rows
    assert "Select a row to read the whole chunk." in texts(at.caption)


def test_a_compare_selection_does_not_outlive_the_comparison_it_was_made_on(app_env, shared_data):
    at = upload(start(), shared_data, PDF)
    at.switch_page(nav.COMPARE.path).run()
    at.text_input(key="compare_query").set_value("Welche Schriftgröße verwendet die Klasse?")
    at.slider(key="compare_top_k").set_value(10)
    button(at, "Compare").click().run()
    select(at, "compare_table_b", 9)
    assert not at.exception, at.exception
    at.slider(key="compare_top_k").set_value(3)
    button(at, "Compare").click().run()
    assert not at.exception, at.exception  # main: IndexError, row 9 of three hits
    assert len(table(at, "compare_table_b").value) == 3
    assert not [m for m in at.markdown if plain(m.value).startswith("**B #")]


# ---- 2. the picker chooses by name -------------------------------------------------------------------------


def browser_sends(element, label: str) -> None:
    """Make the next run send label as the widget's value, as the browser does: it holds the label it showed."""
    class Held(type(element)):
        @property
        def _widget_state(self) -> WidgetState:
            return WidgetState(id=self.id, string_value=label)

    element.__class__ = Held


def test_after_a_delete_the_collection_is_still_chosen_by_its_name(app_env):
    at = ingest(start(), TEXTS)
    at.switch_page(nav.LIBRARY.path).run()
    select_row(at, 1)
    button(at, "Yes, delete the document").click().run()
    assert picker(at).value == "documents"
    browser_sends(picker(at), "documents · 3 chunks")  # the label the picker showed before the delete
    at.run()
    assert not at.exception, at.exception
    assert picker(at).value == "documents"  # main: "documents · 3 chunks", the old label, became the name
    assert "Collection 'documents': 2 documents, 2 chunks" in plain(texts(at.caption))
    assert not [o for o in picker(at).options if o.endswith("· new")]
    at.switch_page(nav.UPLOAD.path).run()
    assert at.selectbox(key="upload_target").value == "documents"


def test_a_deleted_collection_falls_back_to_an_existing_one_with_a_toast(app_env):
    at = ingest(start(), TEXTS)
    ingest(at, {"delta.md": TEXTS["alpha.md"].replace("Alpha", "Delta")}, into="latex-200")
    picker(at).set_value("latex-200").run()
    at.switch_page(nav.LIBRARY.path).run()
    at.text_input(key="confirm_collection_name-latex-200").set_value("latex-200").run()
    at.button(key="confirm_delete_collection").click().run()
    assert not at.exception, at.exception
    assert picker(at).value == "documents"  # main: "latex-200" stayed chosen
    assert "latex-200 · 1 chunk" not in picker(at).options and "latex-200" not in picker(at).options
    toasts = texts(at.toast)
    assert "Deleted the collection 'latex-200' (1 chunk)." in plain(toasts)
    assert "The collection 'latex-200' no longer exists: showing 'documents'." in plain(toasts)
    assert "Collection 'documents': 3 documents" in plain(texts(at.caption))


def test_a_new_session_opens_the_largest_collection_not_an_empty_default(app_env):
    ingest_outside(app_env, "latex", TEXTS)  # as after a restart: no session ever chose it
    at = start()
    assert picker(at).value == "latex"  # main: "documents", a collection that does not exist
    at.switch_page(nav.SEARCH.path).run()
    assert not at.exception, at.exception
    assert "no keyword (BM25) vectors" not in texts(at.caption)
    assert at.text_input(key="query")


def test_an_empty_collection_says_so_on_search_not_that_it_lacks_keyword_vectors(app_env):
    ingest_outside(app_env, "latex", TEXTS)
    at = start()
    picker(at).set_value("documents").run()
    at.switch_page(nav.SEARCH.path).run()
    assert not at.exception, at.exception
    assert "no keyword (BM25) vectors" not in texts(at.caption)
    assert "The collection 'documents' holds no chunks: pick another one above" in plain(texts(at.info))


def test_a_new_session_opens_the_collection_last_used(app_env):
    ingest_outside(app_env, "large", TEXTS)
    ingest_outside(app_env, "small", {"alpha.md": TEXTS["alpha.md"]})
    first = start()
    assert picker(first).value == "large"
    picker(first).set_value("small").run()
    assert start().sidebar.selectbox(key="collection_choice").value == "small"  # a new tab: the last used


# ---- 3. a job that ends selects what it wrote, also after a reload -----------------------------------------


def test_a_reload_after_an_ingest_opens_the_collection_it_wrote(app_env):
    at = ingest(start(), TEXTS, into="latex")
    assert picker(at).value == "latex"
    reloaded = start()  # a new session, as after a reload
    assert picker(reloaded).value == "latex"  # main: "documents · new"
    reloaded.switch_page(nav.CHUNKS.path).run()
    assert plain(reloaded.selectbox(key="chunks_document").value) in {d.document_id for d in
                                                                      store_of(app_env).documents("latex")}


@pytest.mark.live_jobs
def test_a_reload_during_an_ingest_selects_the_collection_once_the_job_ends(app_env):
    store = store_of(app_env)
    embedder = Gated()
    queue = jobs.jobs_queue(resources.change_hook())
    files = [SourceFile(name, text.encode()) for name, text in TEXTS.items()]
    queue.submit(files, "latex", ChunkSettings(), embedder, store, store.location)
    assert embedder.waiting.wait(30)
    at = start()  # the reload: a new session while the job runs
    assert "Ingesting into 'latex'" in plain(texts(at.markdown))
    embedder.gate.set()
    assert queue.wait_idle(60)
    at.run()  # the page's live progress redraws it once the job is gone
    assert not at.exception, at.exception
    assert picker(at).value == "latex"  # main: "documents · new"
    at.switch_page(nav.CHUNKS.path).run()
    assert "holds no documents yet" not in texts(at.info)
    titles = {d.document_id: d.title for d in store.documents("latex")}
    assert titles[at.selectbox(key="chunks_document").value] in TEXTS


# ---- 8. forms keep their values for the session ------------------------------------------------------------


def test_evaluate_and_compare_keep_their_settings_when_you_come_back(app_env):
    at = ingest(start(), TEXTS)
    at.switch_page(nav.EVALUATE.path).run()
    at.text_input(key="evaluate_sizes").set_value("100,300")
    at.text_input(key="evaluate_ks").set_value("1,5")
    at.selectbox(key="evaluate_strategy").set_value("tokens")
    at.multiselect(key="evaluate_modes").set_value(["dense", "sparse"])
    at.radio(key="evaluate_documents_from").set_value("Upload documents")
    button(at, "Run the sweep").click().run()  # a form's values count once it is submitted
    assert "Choose a query set and documents first." in texts(at.info)
    at.switch_page(nav.COMPARE.path).run()
    at.text_input(key="compare_query").set_value("Kündigungsfrist")
    at.slider(key="compare_top_k").set_value(20)
    at.selectbox(key="compare_b_mode").set_value("sparse")
    at.run()
    at.switch_page(nav.SEARCH.path).run()
    at.switch_page(nav.EVALUATE.path).run()
    assert at.text_input(key="evaluate_sizes").value == "100,300"  # main: "200,400,800" again
    assert at.text_input(key="evaluate_ks").value == "1,5"
    assert at.selectbox(key="evaluate_strategy").value == "tokens"
    assert at.multiselect(key="evaluate_modes").value == ["dense", "sparse"]
    assert at.radio(key="evaluate_documents_from").value == "Upload documents"
    at.switch_page(nav.COMPARE.path).run()
    assert at.text_input(key="compare_query").value == "Kündigungsfrist"
    assert at.slider(key="compare_top_k").value == 20
    assert at.selectbox(key="compare_b_mode").value == "sparse"


# ---- 9. counts in words, heading paths by their end --------------------------------------------------------


def test_one_of_a_thing_is_said_in_the_singular(app_env):
    ingest_outside(app_env, "sweep-abc123-350-50-structure", {"alpha.md": TEXTS["alpha.md"]})
    at = ingest(start(), {"alpha.md": TEXTS["alpha.md"]})
    assert "documents · 1 chunk" in picker(at).options
    assert [t.label for t in at.sidebar.toggle] == ["Show the 1 sweep collection"]  # main: "collections"
    at.switch_page(nav.LIBRARY.path).run()
    assert "Collection 'documents': 1 document, 1 chunk, " in plain(texts(at.caption))  # main: "1 document(s)"
    assert "Sweep collections: 1 from 1 sweep" in [plain(e.label) for e in at.expander]


def test_tables_show_the_end_of_a_deep_heading_path(app_env):
    at = ingest(start(), {"handbuch.md": DEEP})
    at.switch_page(nav.CHUNKS.path).run()
    assert set(at.dataframe[0].value["heading path"]) == {"… › Kapitel 2 › Auftragsklärung"}
    at.switch_page(nav.SEARCH.path).run()
    at.text_input(key="query").set_value("Auftragsklärung Termine")
    button(at, "Search").click().run()
    assert not at.exception, at.exception
    assert at.dataframe[0].value["heading path"][0] == "… › Kapitel 2 › Auftragsklärung"  # main: from the top
