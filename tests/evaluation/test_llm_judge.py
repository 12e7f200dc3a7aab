"""The LLM judge against a loopback stand-in chat server: marked grades, person wins, agreement, bad answers."""

from __future__ import annotations

import json

import pytest

from rag.evaluation.judges.agreement import cohen_kappa
from tests.cli.test_judge_cli import QUESTION, hits, two_chunkings  # noqa: F401 (the fixture)
from tests.conftest import FakeChatServer, run


class GradingServer(FakeChatServer):
    """Answers with a grade chosen by the passage it is asked about (2 Fernsehturm, 1 other Berlin, 0 else)."""

    bad = ""

    @property
    def answer(self) -> str:
        if self.bad:
            return self.bad
        prompt = self.requests[-1]["json"]["messages"][-1]["content"].partition("Abschnitt aus")[2]
        return "2" if "Fernsehturm" in prompt else "1" if "berlin.txt" in prompt else "0 – nicht relevant"

    @answer.setter
    def answer(self, value: str) -> None:
        pass


@pytest.fixture
def grader(monkeypatch):
    server = GradingServer()
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    yield server
    server.close()


@pytest.mark.slow
def test_llm_grades_unjudged_hits_and_agreement_with_the_person(two_chunkings, grader, capsys):  # noqa: F811
    store, queries = str(two_chunkings / "qdrant"), str(two_chunkings / "q.jsonl")
    top = hits(capsys, store, "small", k="4")
    tower = next(h for h in top if "Fernsehturm" in h["content"])
    berlin = next(h for h in top if h["document_title"] == "berlin.txt" and h is not tower)
    assert run(capsys, "--store", store, "judge", QUESTION, "--collection", "small", "--chunk", tower["chunk_id"],
               "--grade", "2", "--queries", queries)[0] == 0
    code, out, err = run(capsys, "--store", store, "judge", "--llm", "ollama:judge", "--queries", queries,
                         "--collection", "small", "--top-k", "4", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["by"], data["judged"], data["checked"], data["already_judged"]) == ("llm:judge", 3, 1, 0)
    assert data["agreement"]["shared"] == 1 and data["agreement"]["exact_agreement"] == 1.0  # the tower: 2 and 2
    assert len(grader.requests) == 4 and all("Du beurteilst" in r["json"]["messages"][0]["content"]
                                             for r in grader.requests)  # a German question: a German prompt
    again = run(capsys, "--store", store, "judge", "--llm", "ollama:judge", "--queries", queries, "--collection",
                "small", "--top-k", "4", "--json")
    assert json.loads(again[1])["already_judged"] == 4 and len(grader.requests) == 4  # nothing is sent twice
    # the person judges two hits the LLM graded: one agrees (wien 0), one does not (berlin 0 against 1)
    wien = next(h for h in top if h["document_title"] == "wien.txt")
    for chunk in (berlin, wien):
        assert run(capsys, "--store", store, "judge", QUESTION, "--collection", "small", "--chunk",
                   chunk["chunk_id"], "--grade", "0", "--queries", queries)[0] == 0
    code, out, _ = run(capsys, "judge", "--list", "--queries", queries, "--json")
    listed = json.loads(out)
    llm = [j for j in listed["questions"][0]["judgments"] if j["by"] == "llm:judge"]
    assert len(llm) == 4 and {j["grade"] for j in llm} <= {0, 1, 2}
    agreement = listed["agreement"]
    # pairs (person, llm): tower (2, 2), berlin (0, 1), wien (0, 0): p_o = 2/3; p_e = 1/3 * 1/3 (grade 2)
    # + 2/3 * 1/3 (grade 0) = 1/3; kappa = (2/3 - 1/3) / (1 - 1/3) = 0.5
    assert agreement["shared"] == 3 and agreement["exact_agreement"] == pytest.approx(2 / 3, abs=1e-4)
    assert agreement["kappa"] == pytest.approx(0.5)
    code, out, _ = run(capsys, "--store", store, "eval", queries, "--collection", "small", "--k", "4", "--json")
    graded = {r["chunk_id"]: r["grade"] for r in json.loads(out)["per_query"][0]["retrieved"]}
    assert graded[berlin["chunk_id"]] == 0  # the person wins over the LLM's 1


def test_an_llm_that_answers_maybe_is_one_line_and_loses_nothing(two_chunkings, grader, capsys):  # noqa: F811
    store, queries = str(two_chunkings / "qdrant"), two_chunkings / "q.jsonl"
    tower = next(h for h in hits(capsys, store, "small") if "Fernsehturm" in h["content"])
    run(capsys, "--store", store, "judge", QUESTION, "--collection", "small", "--chunk", tower["chunk_id"],
        "--grade", "2", "--queries", str(queries))
    before = queries.read_bytes()
    grader.bad = "maybe"
    code, out, err = run(capsys, "--store", store, "judge", "--llm", "ollama:judge", "--queries", str(queries),
                         "--collection", "small")
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 1 and len(lines) == 1 and "answered 'maybe' instead of a grade 0, 1 or 2" in lines[0]
    assert queries.read_bytes() == before
    code, _, err = run(capsys, "--store", store, "judge", "--llm", "nonsense", "--queries", str(queries),
                       "--collection", "small")
    assert code == 1 and "Unknown LLM 'nonsense'" in err


def test_english_questions_get_an_english_prompt():
    from rag.evaluation.judges.llm_judge import judge_messages, parse_grade
    from rag.retrieval.records import Hit

    hit = Hit(None, "The tower is 368 metres high.", "d", "d.md", "c", 0, (), None, None, 0, 29)
    assert judge_messages("How high is the tower?", hit)[0]["content"].startswith("You judge")
    assert [parse_grade(a, "m") for a in ("2", " 1.", "**0** not relevant", "2 - relevant")] == [2, 1, 0, 2]
    for bad in ("maybe", "3", "12", "0.5", ""):
        with pytest.raises(Exception, match="instead of a grade"):
            parse_grade(bad, "m")


def test_cohen_kappa_by_hand():
    pairs = [(2, 2), (2, 1), (0, 0), (1, 1), (0, 0), (2, 2)]
    observed = 5 / 6
    expected = (3 * 2 + 1 * 2 + 2 * 2) / 36  # grade 2: 3 x 2, grade 1: 1 x 2, grade 0: 2 x 2
    assert cohen_kappa(pairs) == pytest.approx((observed - expected) / (1 - expected))
    assert cohen_kappa([(1, 1), (1, 1)]) is None and cohen_kappa([]) is None
