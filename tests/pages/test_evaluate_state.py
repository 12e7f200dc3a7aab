"""The Evaluate page's state (issue 34): a new result resets the choices made on the old one, the inputs survive a
reload, a running sweep's Cancel says so at once, and nothing asks to run a sweep while one runs."""

from __future__ import annotations

import pytest

from tests.pages.conftest import plain, until
from tests.pages.test_evaluate_page import evaluate_page, newest_sweep, one_article, set_grid
from ui import jobs

JOB_WAIT = 180
PICKERS = ("evaluate_rank_config", "evaluate_failure_config", "evaluate_funnel_config", "apply_row")


@pytest.fixture
def env(sweep_env):
    return sweep_env


def test_a_new_sweep_resets_every_row_chosen_on_the_one_before(env):
    at = evaluate_page()
    one_article(at)
    set_grid(at, "100,200", "0", "1,5", modes=["dense", "sparse"])
    first = at.session_state["evaluate_result"]
    other = next(r.label for r in first.results if r.label != first.best().label)
    for key in PICKERS:  # the analyst looks at another row everywhere
        at.selectbox(key=key).set_value(other)
    at.selectbox(key="evaluate_failure_k").set_value(1)
    at.run()
    assert all(at.selectbox(key=key).value == other for key in PICKERS)
    set_grid(at, "100,200", "0", "1,5", modes=["dense", "sparse"])  # a new result, holding a row of that label
    second = at.session_state["evaluate_result"]
    assert second is not first and other in [r.label for r in second.results]
    best = second.best().label
    assert {key: at.selectbox(key=key).value for key in PICKERS} == dict.fromkeys(PICKERS, best)
    assert at.selectbox(key="evaluate_failure_k").value == 5
    missed = len(second.best().evaluation.failures(5))
    assert any(plain(c.value).startswith(f"{missed} of {second.queries} queries have no relevant chunk in the top 5")
               for c in at.caption)


@pytest.fixture
def held(hold):
    return hold("embed_documents")


@pytest.mark.live_jobs
def test_under_a_running_sweep_cancel_says_cancelling_at_once_and_no_caption_asks_for_a_sweep(env, held):
    at = evaluate_page()
    one_article(at)
    set_grid(at, "100,200", "0", "1,5", modes=["dense"])
    assert held.waiting.wait(JOB_WAIT)
    job = newest_sweep()
    until(lambda: job.progress is not None and job.progress.stage == "embedding", "the first embedding event")
    at.run()
    captions = [plain(c.value) for c in at.caption]
    assert not [c for c in captions if c.startswith("Choose a query set")], captions
    at.button(key=f"cancel-sweepjob-{job.id}").click().run()  # the embedder is still busy with its slice
    assert job.cancel_requested and job.status == "running"
    heads = [plain(m.value) for m in at.markdown if plain(m.value).startswith("**")]
    assert any(h.startswith("**Cancelling") for h in heads), heads
    assert [plain(p.proto.text) for p in at.get("progress")][0].startswith("Cancelling")
    held.open.set()
    assert jobs.jobs_queue().wait_idle(JOB_WAIT)
    assert job.status == "cancelled"
