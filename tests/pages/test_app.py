"""Every page with Streamlit's AppTest: widgets exist, the main flows work on a real PDF, errors show as errors.

Each test gets its own embedded Qdrant folder and the `fake` embedder (`app_env` in conftest.py; one test uses the
real local model).
"""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from rag.chunking.chunker import DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP
from tests.pages.conftest import APP, PDF, ROOT, button, plain, results, search, settled, start, texts, upload
from tests.pages.conftest import table as keyed_table
from ui import nav

SECRET = "sk-test-secret-4242"


# ---- upload ----------------------------------------------------------------------------------------------


def test_upload_page_has_its_widgets_and_a_first_run_guide(app_env, shared_data):
    at = start()
    assert at.title[0].value == "Upload"
    assert at.file_uploader[0].accept_multiple_files
    assert set(at.file_uploader[0].allowed_type) >= {".pdf", ".txt", ".md"}
    assert at.number_input(key="upload_chunk_size").value == DEFAULT_CHUNK_SIZE == 350
    assert at.number_input(key="upload_overlap").value == DEFAULT_OVERLAP == 50
    assert at.button_group(key="upload_strategy").value == "structure"
    assert at.selectbox(key="upload_target").value == "documents"
    assert button(at, "Ingest").disabled
    assert "The store is empty" in texts(at.markdown)
    assert "No sample documents here" in texts(at.info) and "RAG_SAMPLE_DIR" in texts(at.info)  # no such folder
    assert at.sidebar.selectbox(key="collection_choice").options[-1] == "+ New collection…"  # ASCII: a real glyph
    assert [s.label for s in at.sidebar.selectbox][:2] == ["Collection", "Embedder"]


def test_upload_ingests_a_real_pdf_and_reports_bad_files_in_words(app_env, shared_data):
    at = upload(start(), shared_data, PDF, "pdfs/invalid.pdf", "pdfs/c02-22.pdf")
    rows = results(at)
    assert rows["hausarbeit-jura.pdf"]["status"] == "ingested"
    assert rows["hausarbeit-jura.pdf"]["pages"] == 8
    assert rows["hausarbeit-jura.pdf"]["chunks"] == 20
    assert rows["hausarbeit-jura.pdf"]["characters"] > 10_000
    assert rows["invalid.pdf"]["status"] == rows["c02-22.pdf"]["status"] == "failed"
    errors = texts(at.error)
    assert "'invalid.pdf' could not be read as a PDF" in errors
    assert "'c02-22.pdf' has no text layer" in errors and "OCR" in errors
    assert "1 of 3 files ingested." in texts(at.caption)
    assert at.sidebar.selectbox[0].value == "documents"
    assert "documents · 20 chunks" in at.sidebar.selectbox[0].options


def test_settings_out_of_range_are_refused_before_ingesting(app_env):
    at = start()
    at.number_input(key="upload_chunk_size").set_value(50)
    at.number_input(key="upload_overlap").set_value(60)
    at.run()
    assert "overlap must be between 0 and chunk_size - 1" in texts(at.error)
    assert button(at, "Ingest").disabled


def test_an_encrypted_pdf_asks_for_its_password_and_retries(app_env, shared_data):
    at = upload(start(), shared_data, "pdfs/encrypted-file.pdf")
    assert results(at)["encrypted-file.pdf"]["status"] == "needs password"
    form_input = at.main.text_input[-1]
    assert "Password for encrypted-file.pdf" in plain(form_input.label)
    form_input.set_value("wrong")
    settled(button(at, "Open and ingest").click())
    assert "The password for 'encrypted-file.pdf' is wrong" in texts(at.warning)
    at.main.text_input[-1].set_value("test")
    settled(button(at, "Open and ingest").click())
    assert not at.exception
    assert results(at)["encrypted-file.pdf"]["status"] == "ingested"
    assert not [b for b in at.button if plain(b.label) == "Open and ingest"]


def test_the_sample_button_loads_a_folder_and_skips_license_files(app_env, shared_data):
    samples = app_env / "samples" / "nested"
    samples.mkdir(parents=True)
    (samples / "hausarbeit-jura.pdf").write_bytes((shared_data / PDF).read_bytes())
    (samples / "invalid.pdf").write_bytes((shared_data / "pdfs/invalid.pdf").read_bytes())
    (samples / "notiz.txt").write_text("Kündigungsfristen im Mietrecht betragen drei Monate.", encoding="utf-8")
    (samples / "LICENSE.md").write_text("license text")
    at = start()
    settled(button(at, "Load the 3 sample documents").click())
    assert not at.exception
    rows = results(at)
    assert set(rows) == {"hausarbeit-jura.pdf", "invalid.pdf", "notiz.txt"}
    assert rows["notiz.txt"]["status"] == "ingested" and rows["invalid.pdf"]["status"] == "failed"
    assert "Start here" not in [s.value for s in at.subheader]


# ---- library ---------------------------------------------------------------------------------------------


def test_library_lists_documents_and_deletes_one_after_confirmation(app_env, shared_data):
    at = upload(start(), shared_data, PDF, "pdfs/crazyones.pdf")
    at.switch_page(nav.LIBRARY.path).run()
    frame = at.dataframe[0].value
    assert sorted(frame["document"]) == ["crazyones.pdf", "hausarbeit-jura.pdf"]
    row = frame[frame["document"] == "hausarbeit-jura.pdf"].iloc[0]
    assert (row["chunks"], row["chunk_size"], row["overlap"], row["strategy"]) == (20, 350, 50, "structure")
    assert "Select a row" in texts(at.caption)


def test_library_deletes_a_collection_only_when_its_name_is_typed(app_env, shared_data):
    at = upload(start(), shared_data, "pdfs/crazyones.pdf")
    at.switch_page(nav.LIBRARY.path).run()
    confirm = at.button(key="confirm_delete_collection")
    assert confirm.disabled
    at.text_input(key="confirm_collection_name-documents").set_value("documents").run()
    at.button(key="confirm_delete_collection").click().run()
    assert not at.exception
    assert "is empty: nothing was ingested into it yet" in texts(at.info)


def test_library_of_an_empty_collection_points_to_upload(app_env):
    at = start(nav.LIBRARY.path)
    assert "nothing was ingested" in texts(at.info)


# ---- chunks ----------------------------------------------------------------------------------------------


def test_chunks_page_shows_table_flags_document_tuning_and_tree(app_env, shared_data):
    at = upload(start(), shared_data, PDF)
    at.switch_page(nav.CHUNKS.path).run()
    assert not at.exception
    table = keyed_table(at, "chunk_table").value
    assert len(table) == 20 and list(table["#"]) == list(range(20))
    assert {"tokens", "model tokens", "cut off", "heading path", "pages", "flags", "start of content"} <= set(table)
    assert "Klassenoptionen › Schriftgrößen" in set(table["heading path"])
    assert "no heading" in ",".join(table["flags"])
    assert "tiny" not in ",".join(table["flags"])  # headings join the text after them: no heading-only chunks
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["chunks"] == "20" and metrics["cut off"] == "0"
    html = "".join(h.proto.body for h in at.get("html"))
    assert 'class="rl-overlap"' in html and "#19</span>" in html
    tree = keyed_table(at, "tree_table").value
    assert tree["section"].str.strip().tolist()[:3] == ["(before the first heading)", "Einleitung", "Verwendete Pakete"]


def test_live_tuning_rechunks_without_reingesting(app_env, shared_data):
    at = upload(start(), shared_data, PDF)
    at.switch_page(nav.CHUNKS.path).run()
    comparison = next(d.value for d in at.dataframe if "change" in d.value)
    assert comparison.iloc[0, 1] == comparison.iloc[0, 2] == 20
    at.slider(key="tune_size").set_value(200).run()
    comparison = next(d.value for d in at.dataframe if "change" in d.value)
    assert comparison.iloc[0, 2] > 20 and comparison.iloc[0, 3].startswith("+")
    assert comparison.columns[2] == "new: 200 / 50 / structure"
    at.slider(key="tune_overlap").set_value(300).run()
    assert "overlap must be between 0 and chunk_size - 1" in texts(at.error)


def test_chunks_page_escapes_document_text(app_env):
    folder = app_env / "samples"
    folder.mkdir()
    (folder / "evil.md").write_text("# Titel\n<script>alert(1)</script> **fett** [link](http://x)\n", encoding="utf-8")
    at = start()
    settled(button(at, "Load the 1 sample documents").click())
    at.switch_page(nav.CHUNKS.path).run()
    html = "".join(h.proto.body for h in at.get("html"))
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_chunks_page_without_documents_says_how_to_start(app_env):
    at = start(nav.CHUNKS.path)
    assert "holds no documents yet" in texts(at.info)


# ---- search ----------------------------------------------------------------------------------------------


def test_search_page_widgets(app_env, shared_data):
    at = upload(start(), shared_data, PDF)
    at.switch_page(nav.SEARCH.path).run()
    top_k = at.slider(key="top_k")
    assert (top_k.min, top_k.max, top_k.value) == (1, 50, 5)
    assert at.selectbox(key="search_collection").value == "documents"
    assert at.checkbox(key="use_threshold").value is False
    assert at.multiselect(key="document_filter").value == []


def test_search_shows_hits_scores_per_source_and_neighbours(app_env, shared_data):
    at = upload(start(), shared_data, PDF, "pdfs/crazyones.pdf")
    at.switch_page(nav.SEARCH.path).run()
    search(at, "Schriftgröße der Klasse", top_k=8)
    frame = at.dataframe[0].value
    assert list(frame["rank"]) == list(range(1, 9))
    assert list(frame["score"]) == sorted(frame["score"], reverse=True)
    assert "Schriftgrößen" in " ".join(frame["heading path"])
    assert "8 hits for “Schriftgröße der Klasse”" in texts(at.caption)
    assert len([e for e in at.main.expander if plain(e.label).startswith("#")]) == 8  # one per hit
    next(t for t in at.toggle if t.key.startswith("neighbours-")).set_value(True).run()  # not "Show on page"
    assert "(after)" in texts(at.caption)


@pytest.mark.slow
def test_search_says_when_the_threshold_removed_everything_and_when_top_k_is_too_big(app_env, shared_data):
    at = upload(start(), shared_data, "pdfs/crazyones.pdf")
    at.switch_page(nav.SEARCH.path).run()
    at.button_group(key="search_mode").set_value("dense").run()  # cosine: 0.99 is far above any hit
    at.checkbox(key="use_threshold").check()
    at.number_input(key="threshold-cosine").set_value(0.99)
    search(at, "crazy ones misfits", top_k=30)
    warnings = texts(at.warning)
    assert "fewer than top_k = 30" in warnings and "removed all" in warnings
    at.switch_page(nav.CONTEXT.path).run()
    assert "found no hits" in texts(at.warning)


def test_an_empty_query_is_an_error_not_a_traceback(app_env, shared_data):
    at = upload(start(), shared_data, "pdfs/crazyones.pdf")
    at.switch_page(nav.SEARCH.path).run()
    search(at, "   ")
    assert "The query is empty" in texts(at.error)


# ---- across the app --------------------------------------------------------------------------------------


def test_a_server_that_is_down_shows_an_error_not_a_traceback(app_env, monkeypatch):
    monkeypatch.setenv("QDRANT_URL", "http://127.0.0.1:9")
    at = start()
    assert "cannot be reached" in texts(at.sidebar.error)
    assert "cannot open its Qdrant store" in texts(at.error)


def test_an_unknown_embedder_is_an_error_with_the_valid_names(app_env, monkeypatch, shared_data):
    monkeypatch.setenv("RAG_EMBEDDER", "word2vec")
    at = upload(start(), shared_data, "pdfs/crazyones.pdf")
    assert "Unknown embedder 'word2vec'" in texts(at.error) and "ollama:<model>" in texts(at.error)


def test_secrets_are_never_shown(app_env, monkeypatch, shared_data):
    monkeypatch.setenv("QDRANT_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    at = upload(start(), shared_data, "pdfs/crazyones.pdf")
    for page in (nav.LIBRARY.path, nav.CHUNKS.path, nav.SEARCH.path, nav.CONTEXT.path):
        at.switch_page(page).run()
        assert SECRET not in str(at._tree), page
    assert "API key: configured" in texts(at.sidebar.caption)


@pytest.mark.model
def test_real_model_flags_cut_off_chunks_and_finds_german_text(app_env, monkeypatch, shared_data):
    monkeypatch.setenv("RAG_EMBEDDER", "local:all-MiniLM-L6-v2")  # English, 256 wordpieces: it cuts chunks off
    at = upload(start(), shared_data, PDF)
    assert results(at)["hausarbeit-jura.pdf"]["status"] == "ingested"
    at.switch_page(nav.CHUNKS.path).run()
    warning = texts(at.warning)
    assert "longer than local:all-MiniLM-L6-v2 reads (256 tokens of its own)" in warning
    assert "chunk_size of about" in warning
    table = keyed_table(at, "chunk_table").value
    assert (table["cut off"] > 0).any() and (table["model tokens"] > 256).any()
    at.switch_page(nav.SEARCH.path).run()
    search(at, "Wie stellt man die Schriftgröße ein?")
    assert "Schriftgrößen" in " ".join(at.dataframe[0].value["heading path"][:3])


def test_keyword_and_hybrid_search_explain_their_scores(app_env, shared_data):
    at = upload(start(), shared_data, PDF)
    at.switch_page(nav.SEARCH.path).run()
    assert at.button_group(key="search_mode").options  # dense, keyword, hybrid
    at.button_group(key="search_mode").set_value("sparse").run()
    search(at, "Schriftgrößen")
    assert "keyword search (BM25)" in texts(at.caption)
    assert "Schriftgrößen" in at.dataframe[0].value["heading path"][0]
    at.button_group(key="search_mode").set_value("hybrid").run()
    search(at, "Schriftgrößen")
    frame = at.dataframe[0].value
    assert {"dense rank", "keyword rank"} <= set(frame) and "hybrid (convex)" in texts(at.caption)  # the default


def test_settings_fall_back_to_streamlit_secrets(app_env):
    at = AppTest.from_file(APP, default_timeout=120)
    at.secrets["RAG_COLLECTION"] = "vertraege"
    at.secrets["OPENAI_API_KEY"] = SECRET
    at.run()
    assert at.sidebar.selectbox(key="collection_choice").value == "vertraege"
    assert "API key: configured" in texts(at.sidebar.caption)
    assert SECRET not in str(at._tree)


def test_every_page_file_is_in_the_navigation_and_every_link_names_one():
    files = {str(p.relative_to(ROOT)) for p in (ROOT / "app_pages").glob("*.py")}
    assert files == {page.path for page in nav.PAGES}, "a page file is missing from ui/nav.py, or nav names a ghost"
    typed = [str(p.relative_to(ROOT)) for folder in ("app_pages", "ui") for p in (ROOT / folder).rglob("*.py")
             if re.search(r"""(page_link|switch_page|st\.Page)\(\s*["']""", p.read_text(encoding="utf-8"))]
    assert typed == [], "link to pages through ui.nav, not a typed path"


def test_after_the_first_search_the_controls_act_at_once_and_the_query_is_embedded_once(app_env, shared_data,
                                                                                         monkeypatch):
    from rag.embeddings.base import PromptedEmbedder

    calls = []
    original = PromptedEmbedder.embed_query
    monkeypatch.setattr(PromptedEmbedder, "embed_query", lambda self, texts: calls.append(list(texts)) or
                        original(self, texts))
    at = upload(start(), shared_data, PDF)
    at.switch_page(nav.SEARCH.path).run()
    search(at, "Welche Schriftgröße nutzt die Klasse hier")  # a query no other test embeds (the cache is global)
    assert "5 hits" in texts(at.caption)
    at.slider(key="top_k").set_value(8).run()  # no Search press
    assert "8 hits" in texts(at.caption) and len(at.dataframe[0].value) == 8
    at.button_group(key="search_mode").set_value("dense").run()
    caption = texts(at.caption)
    assert "8 hits for “Welche Schriftgröße nutzt die Klasse hier”" in caption and "fake" in caption
    at.button_group(key="search_mode").set_value("sparse").run()
    assert "keyword search (BM25)" in texts(at.caption)
    assert at.checkbox(key="use_threshold").label == "Score threshold (BM25)"
    assert at.number_input(key="threshold-BM25").value == 2.0 and at.number_input(key="threshold-BM25").step == 0.5
    assert calls.count(["Welche Schriftgröße nutzt die Klasse hier"]) == 1  # hybrid, top_k, dense: one embedding


def test_tuned_settings_are_applied_as_a_job_and_the_unread_part_is_struck_through(app_env, shared_data,
                                                                                    monkeypatch):
    from rag.embeddings.fake import FakeEmbedder
    from rag.store.open import open_store

    monkeypatch.setattr(FakeEmbedder, "max_input_tokens", 128)  # a model that reads 128 tokens of a 350-token chunk
    at = upload(start(), shared_data, PDF)
    at.switch_page(nav.CHUNKS.path).run()
    document_html = "".join(h.proto.body for h in at.get("html"))
    assert 'class="rl-cut"' in document_html and "the struck-through text is never embedded" in texts(at.caption)
    at.slider(key="tune_size").set_value(200).run()
    boundaries = [h.proto.body for h in at.get("html") if "rl-badge" in h.proto.body]
    assert len(boundaries) == 2  # the stored chunks and the new ones
    assert boundaries[1].count('class="rl-badge"') > boundaries[0].count('class="rl-badge"')
    at.radio(key="apply_target").set_value("a new collection").run()
    assert at.text_input(key="apply_collection").value == "documents-200"
    settled(at.button(key="apply_run").click())  # queued as a job; the page tests wait for it
    assert not at.exception, at.exception
    store = open_store(path=str(app_env / "qdrant"))
    [document] = store.documents("documents-200")
    assert (document.chunk_size, document.overlap, document.complete) == (200, 50, True)
    assert document.chunks == int(next(d.value for d in at.dataframe if "change" in d.value).iloc[0, 2])
    assert [d.chunk_size for d in store.documents("documents")] == [350]  # the source stays as it was


def test_markdown_hits_have_no_page_and_an_encrypted_pdf_asks_for_the_password_here(app_env, shared_data):
    at = upload(start(), shared_data, "markdown/asvs-de-Using-ASVS.md", "pdfs/encrypted-file.pdf")
    form = [w for w in at.warning if "is encrypted. Type its password here" in plain(w.value)]
    assert form and "upload it again" not in texts(at.warning)
    at.switch_page(nav.SEARCH.path).run()
    search(at, "Wie benutzt man den ASVS?")
    assert set(at.dataframe[0].value["pages"]) == {""}
    assert not [e.label for e in at.main.expander if " · p. " in plain(e.label)]

