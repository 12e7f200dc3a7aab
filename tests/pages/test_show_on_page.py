""""Show on page" on Search, Chunks and Context (AppTest): drawn only when asked, as an image for a PDF, as marked
plain text for a text file, and one line for a document stored before boxes were kept."""

from __future__ import annotations

from rag.reports import CHUNK_CLOSE, CHUNK_OPEN, MARK_CLOSE, MARK_OPEN
from rag.store.open import open_store
from tests.pages.conftest import PDF, button, plain, search, select, settled, start, upload
from ui import nav


def images(at) -> list:
    """Return the st.image elements of the page (AppTest has no accessor of its own for them)."""
    return list(at.get("image"))


def captions(at) -> list[str]:
    return [plain(c.value) for c in at.caption]


def test_a_hit_shows_its_page_only_when_asked(app_env, shared_data):
    at = upload(start(), shared_data, PDF).switch_page(nav.SEARCH.path).run()
    search(at, "Schriftgröße Punkt Office", top_k=5)
    hits = at.session_state["search"].outcome.hits
    assert not images(at)  # nothing drawn before a toggle is on
    at.session_state[f"page-hit-1-{hits[0].chunk_id}"] = True
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    [image] = images(at)
    assert "/media/" in image.value[0] and image.value[0].endswith(".png")  # a media file, no HTML
    drawn = [c for c in captions(at) if c.startswith("Page ") and "of hausarbeit-jura.pdf" in c]
    assert drawn and "amber: the chunk" in drawn[0]
    assert f"Page {hits[0].page_start} of" in drawn[0]


def test_a_hit_ranked_by_a_child_marks_the_child_in_red(app_env, shared_data):
    at = upload(start(), shared_data, PDF).switch_page(nav.SEARCH.path).run()
    search(at, "Seitenzahlen Fußzeile zentrierte Ausgabe", top_k=10)
    hits = at.session_state["search"].outcome.hits
    ranked = [(rank, h) for rank, h in enumerate(hits, 1) if h.child is not None and h.child.index is not None]
    assert ranked, "no hit was ranked by a child"
    rank, hit = ranked[0]
    at.session_state[f"hit-{rank}-{hit.chunk_id}"] = True
    at.session_state[f"page-hit-{rank}-{hit.chunk_id}"] = True
    at.run()
    assert not at.error, [e.value for e in at.error]
    assert images(at)
    assert any("red: the matched child" in c for c in captions(at)), captions(at)


def test_a_text_file_shows_its_text_with_the_chunk_marked(app_env, shared_data, tmp_path):
    notes = tmp_path / "notiz.txt"
    notes.write_text("Die Frist beträgt drei Monate.\n\n<script>alert(1)</script> **fett** bleibt Text.",
                     encoding="utf-8")
    at = start()
    at.file_uploader[0].set_value([("notiz.txt", notes.read_bytes(), "text/plain")])
    at.run()
    settled(button(at, "Ingest").click())
    at.switch_page(nav.SEARCH.path).run()
    search(at, "Frist drei Monate", top_k=1)
    hit = at.session_state["search"].outcome.hits[0]
    at.session_state[f"page-hit-1-{hit.chunk_id}"] = True
    at.run()
    assert not images(at) and not at.error
    marked = [c.value for c in at.code if CHUNK_OPEN in c.value]
    assert marked and CHUNK_CLOSE in marked[0] and "<script>alert(1)</script> **fett**" in marked[0]  # as text


def test_a_document_stored_before_boxes_says_to_ingest_it_again(app_env, shared_data):
    """Chunks stored without boxes are placed in the kept file by their offsets; with no file kept either (a document
    stored before both were kept) the toggle says in one line to ingest it again."""
    from ui import resources

    at = upload(start(), shared_data, PDF)
    store = at.session_state["workspace"].store
    ids = store.point_ids("documents")
    store.client.delete_payload("documents", ["boxes", "child_boxes"], points=ids)  # as an older collection
    at.switch_page(nav.SEARCH.path).run()
    search(at, "Schriftgröße", top_k=3)
    hit = at.session_state["search"].outcome.hits[0]
    at.session_state[f"page-hit-1-{hit.chunk_id}"] = True
    at.run()
    assert not at.error and len(images(at)) >= 1  # placed in the kept file
    resources.archive(store).original_path(hit.document_id).unlink()  # and no file kept either
    at.session_state[f"page-hit-1-{hit.chunk_id}"] = False
    at.run()
    at.session_state[f"page-hit-1-{hit.chunk_id}"] = True
    at.run()
    assert not images(at)
    [error] = [plain(e.value) for e in at.error]
    assert "\n" not in error and error.startswith("No page image is available for 'hausarbeit-jura.pdf' until the "
                                                  "document is re-ingested")
    assert any("query words in it" in c for c in captions(at))  # the rest of the hit is drawn as before


def test_the_chunks_page_and_the_context_sources_show_the_page(app_env, shared_data):
    at = upload(start(), shared_data, PDF).switch_page(nav.CHUNKS.path).run()
    select(at, "chunk_table", 3)
    assert not images(at)
    toggles = [t for t in at.toggle if t.key and t.key.startswith("page-chunk-")]
    assert len(toggles) == 1
    toggles[0].set_value(True).run()
    assert not at.error and len(images(at)) >= 1
    at.switch_page(nav.SEARCH.path).run()
    search(at, "Schriftgröße Punkt", top_k=3)
    at.switch_page(nav.CONTEXT.path).run()
    sources = [t for t in at.toggle if t.key and t.key.startswith("page-source-")]
    assert len(sources) == 3 and plain(sources[0].label).startswith("Show Quelle 1 on page (hausarbeit-jura.pdf)")
    assert not images(at)
    sources[1].set_value(True).run()
    assert not at.error and images(at)


def test_the_kept_file_goes_with_the_document_deleted_in_the_library(app_env, shared_data):
    at = upload(start(), shared_data, PDF)
    store = open_store()
    [document] = store.documents("documents")
    kept = app_env / "documents" / f"{document.document_id}.pdf"
    assert kept.exists()
    at = select(at.switch_page(nav.LIBRARY.path).run(), "library_table", 0)
    button(at, "Yes, delete the document").click().run()
    assert not at.exception
    assert not kept.exists()


def test_a_judged_hit_shows_its_evidence_on_its_page(app_env, shared_data):
    at = upload(start(), shared_data, PDF).switch_page(nav.SEARCH.path).run()
    search(at, "Welche Schriftgröße verwendet die Klasse?", top_k=3)
    at.session_state["judge_hits"] = True  # the judging expander, opened
    at.run()
    hit = at.session_state["search"].outcome.hits[0]
    evidence = " ".join(hit.content.split()[3:9])
    assert not [t for t in at.toggle if t.key and t.key.startswith("page-judge_page_")]  # not judged yet
    [field] = [t for t in at.text_input if t.key and t.key.startswith("judge_evidence_")][:1]
    field.set_value(evidence).run()
    grade = [b for b in at.button_group if b.key and b.key.startswith("judge_grade_")][0]
    at.button_group(key=grade.key).set_value(2).run()
    assert not at.error, [e.value for e in at.error]
    [toggle] = [t for t in at.toggle if t.key and t.key.startswith("page-judge_page_")]
    assert plain(toggle.label) == "Show the evidence on page"
    toggle.set_value(True).run()
    assert not at.error, [e.value for e in at.error]
    assert images(at)
    assert any("red: the evidence" in c for c in captions(at)), captions(at)


def test_a_missed_questions_answer_is_marked_in_its_text(sweep_env):
    at = start(nav.EVALUATE.path)
    at.radio(key="evaluate_query_from").set_value("Sample folder")
    at.run()
    at.number_input(key="evaluate_articles").set_value(1)
    at.run()
    at.text_input(key="evaluate_sizes").set_value("120")
    at.text_input(key="evaluate_overlaps").set_value("0")
    at.text_input(key="evaluate_ks").set_value("1")
    settled(button(at, "Run the sweep").click())
    assert not at.exception and not at.error, [e.value for e in at.error]
    at = select(at, "evaluate_failures", 0)
    answers = [t for t in at.toggle if t.key and t.key.startswith("page-answer-")]
    firsts = [t for t in at.toggle if t.key and t.key.startswith("page-first-")]
    assert answers and len(firsts) == 1
    answers[0].set_value(True).run()
    assert not at.error, [e.value for e in at.error]
    marked = [c.value for c in at.code if MARK_OPEN in c.value]
    outcome = at.session_state["evaluate_result"].best().evaluation.failures(1)[0]
    assert marked and f"{MARK_OPEN}{outcome.query.answer}{MARK_CLOSE}" in marked[0]
