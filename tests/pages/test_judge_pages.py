"""Judging on the pages (AppTest, real embedded Qdrant): a click on a grade saves the judgment into the collection's
query set under the data root; bad input is one error line; the Evaluate page shows hole@k beside MRR."""

from __future__ import annotations

import json

import pytest

from rag.evaluation.judges.judging import query_set_path, read_query_file
from tests.pages.conftest import PDF, plain, search, settled, start, upload
from ui import nav

QUERY = "Welche Schriftgröße verwendet die Klasse?"


def grade_buttons(at):
    return [b for b in at.button_group if b.key and b.key.startswith("judge_grade_")]


@pytest.mark.slow
def test_a_click_on_a_grade_saves_the_judgment(app_env, shared_data):
    at = upload(start(), shared_data, PDF, "pdfs/crazyones.pdf").switch_page(nav.SEARCH.path).run()
    search(at, QUERY)
    assert not at.exception, at.exception
    assert not grade_buttons(at)  # closed by default: a top_k step does not redraw a row of controls per hit
    at.session_state["judge_hits"] = True  # the expander, opened
    at.run()
    buttons = grade_buttons(at)
    assert len(buttons) == 5
    for button, grade in zip(buttons[:3], (2, 1, 0), strict=False):
        at.button_group(key=button.key).set_value(grade).run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        if grade == 2:  # one of each: no plural
            assert "(1 question, 1 judgment)" in " ".join(plain(c.value) for c in at.caption)
    path = query_set_path(app_env, "documents")
    _, queries = read_query_file(path)
    assert [q.text for q in queries] == [QUERY]
    assert [j.grade for j in queries[0].judgments] == [2, 1, 0]
    assert all(j.by == "person" for j in queries[0].judgments)
    assert "(1 question, 3 judgments)" in " ".join(plain(c.value) for c in at.caption)
    # evidence that is not in the chunk: one error line, nothing saved
    evidence = [t for t in at.text_input if t.key and t.key.startswith("judge_evidence_")][3]
    evidence.set_value("gibt es nicht").run()
    at.button_group(key=grade_buttons(at)[3].key).set_value(2).run()
    assert len(at.error) == 1 and "is not inside chunk" in plain(at.error[0].value)
    assert len(read_query_file(path)[1][0].judgments) == 3
    # a query set broken by hand: an error line naming the line, no grade buttons
    path.write_text(path.read_text() + '{"query": \n')
    at.slider(key="top_k").set_value(4).run()
    assert any("line 2: not valid JSON" in plain(e.value) for e in at.error), [e.value for e in at.error]
    assert not grade_buttons(at)
    assert json.loads(path.read_text().splitlines()[0])["query"] == QUERY


@pytest.mark.slow
def test_the_evaluate_page_shows_holes_beside_mrr_and_judges_a_rows_unjudged_hits(sweep_env, monkeypatch):
    from tests.conftest import FakeChatServer
    from tests.pages.conftest import button

    at = start(nav.EVALUATE.path)
    at.radio(key="evaluate_query_from").set_value("Sample folder").run()
    at.number_input(key="evaluate_articles").set_value(1).run()
    at.text_input(key="evaluate_sizes").set_value("200")
    at.text_input(key="evaluate_overlaps").set_value("0")
    at.text_input(key="evaluate_ks").set_value("1,10")
    settled(button(at, "Run the sweep").click())
    assert not at.exception and not at.error, [e.value for e in at.error]
    frame = at.dataframe[0].value
    columns = list(frame.columns)
    assert columns[columns.index("± mrr@10") + 1] == "hole@10"  # beside the score
    row = at.session_state["evaluate_result"].results[0]
    assert list(frame["hole@10"]) == [round(row.metrics["hole@10"], 3)]
    assert f"hole@10 {row.metrics['hole@10']:.2f}" in " ".join(plain(c.value) for c in at.caption)

    grades = grade_buttons(at)
    assert grades, "no unjudged hit offered"
    at.button_group(key=grades[0].key).set_value(2).run()
    assert not at.error, [e.value for e in at.error]
    path = query_set_path(sweep_env, "evaluate-xquad")
    judged = [q for q in read_query_file(path)[1] if q.judgments]
    assert len(judged) == 1 and judged[0].judgments[0].by == "person"

    server = FakeChatServer("1")
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    try:
        at.button_group(key="judge_eval_who").set_value("An LLM").run()
        at.text_input(key="judge_eval_llm").set_value("ollama:judge").run()
        at.button(key="judge_eval_run").click().run()
    finally:
        server.close()
    assert not at.error, [e.value for e in at.error]
    llm = [j for q in read_query_file(path)[1] for j in q.judgments if j.by == "llm:judge"]
    assert llm and all(j.grade == 1 for j in llm)
    assert f"llm:judge graded {len(llm) - 1} unjudged hits" in " ".join(plain(s.value) for s in at.success)
    assert "and 1 you judged" in " ".join(plain(s.value) for s in at.success)  # the person's: for the agreement


@pytest.mark.slow
def test_the_experiments_page_warns_when_runs_used_different_query_set_versions(app_env, capsys):
    from tests.cli.test_judge_cli import BERLIN, WIEN
    from tests.conftest import run

    store, queries = str(app_env / "qdrant"), str(app_env / "q.jsonl")
    for name, text in (("berlin.txt", BERLIN), ("wien.txt", WIEN)):
        (app_env / name).write_text(text, encoding="utf-8")
    assert run(capsys, "--store", store, "ingest", str(app_env / "berlin.txt"), str(app_env / "wien.txt"),
               "--collection", "documents", "--embedder", "fake")[0] == 0
    hits = json.loads(run(capsys, "--store", store, "search", "Fernsehturm", "--collection", "documents", "--json")[1])
    for number, hit in enumerate(hits["hits"][:2]):
        run(capsys, "--store", store, "judge", "Wie hoch ist der Fernsehturm?", "--collection", "documents",
            "--chunk", hit["chunk_id"], "--grade", str(2 - number * 2), "--queries", queries)
        assert run(capsys, "--store", store, "eval", queries, "--collection", "documents", "--json")[0] == 0
    at = start(nav.EXPERIMENTS.path)
    at.selectbox(key="experiments_a").set_value("1").run()
    at.selectbox(key="experiments_b").set_value("2").run()
    assert not at.exception, at.exception
    warnings = [plain(w.value) for w in at.warning]
    assert any("The runs used different query-set versions (A version 1" in w
               and "1 with changed labels or judgments" in w for w in warnings), warnings


def given_hit(at, judgment):
    """Return the Search page's hit of the chunk a judgment was given on."""
    from ui import state

    hits = at.session_state[state.SEARCH].outcome.hits
    found = [h for h in hits if h.chunk_id == judgment.chunk_id]
    assert found, "the hit judged on Evaluate is not among Search's top 10"
    return found[0]


@pytest.mark.slow
def test_search_and_evaluate_judge_into_one_file_of_the_collection(app_env, monkeypatch):
    from rag.evaluation.judges.judging import save_judgments
    from rag.evaluation.querysets.judgments import Judgment
    from tests.pages.conftest import button
    from ui.parts.judge import widget_key

    monkeypatch.delenv("RAG_SAMPLE_DIR")  # the bundled samples and their queries.jsonl
    first = "Wie lang muss ein Passwort mindestens sein?"  # the first question of queries.jsonl
    older = query_set_path(app_env, "evaluate-queries")  # where Evaluate kept its judgments before
    save_judgments(older, "Wie viele Zeichen braucht ein Administratorkonto?",
                   [Judgment("passwortrichtlinie.md", 0, 40, 1)])
    at = start()
    settled(button(at, "Load the 4 sample documents").click())
    search(at.switch_page(nav.SEARCH.path).run(), first)
    at.session_state["judge_hits"] = True
    at.run()
    at.button_group(key=grade_buttons(at)[0].key).set_value(2).run()
    assert not at.error, [e.value for e in at.error]
    at.switch_page(nav.EVALUATE.path).run()
    at.radio(key="evaluate_query_from").set_value("Sample folder").run()
    at.text_input(key="evaluate_sizes").set_value("350")  # the collection's own: searched as stored
    at.text_input(key="evaluate_overlaps").set_value("50")
    at.text_input(key="evaluate_ks").set_value("10")
    settled(button(at, "Run the sweep").click())
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "Judgments go into documents.jsonl under the data root (the collection 'documents's file, as on Search)" in \
        " ".join(plain(c.value) for c in at.caption)
    path = query_set_path(app_env, "documents")
    judged = {q.text: q for q in read_query_file(path)[1] if q.judgments}
    assert set(judged) == {first, "Wie viele Zeichen braucht ein Administratorkonto?"}  # Search's, and the older
    row = at.session_state["evaluate_result"].best()
    top = next(o for o in row.evaluation.per_query if o.query.text == first).hits[:10]
    searched = judged[first].judgments[0]
    assert any(searched.applies_to(h) for h in top)  # the hit judged on Search is in this row's top 10 ...
    offered = {b.key for b in grade_buttons(at)}
    assert not any(widget_key("judge_grade", first, h) in offered for h in top if searched.applies_to(h))  # ... judged
    # and the other way: a grade given on Evaluate is the grade Search shows for that hit
    at.button_group(key=grade_buttons(at)[0].key).set_value(1).run()
    (given,) = [j for q in read_query_file(path)[1] if q.text == first for j in q.judgments if j.grade == 1]
    search(at.switch_page(nav.SEARCH.path).run(), first, top_k=10)
    at.session_state["judge_hits"] = True
    at.run()
    shown = [b.value for b in grade_buttons(at) if b.key == widget_key("judge_grade", first, given_hit(at, given))]
    assert shown == [1]
