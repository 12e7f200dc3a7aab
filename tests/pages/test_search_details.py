"""The hit details under the Search table (issue 34.9): drawn from the table's own hits, before the slow score
distribution, so the browser never shows the details of the search before under a new table while it waits."""

from __future__ import annotations

import json

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.embeddings import get_embedder
from rag.store.open import open_store
from tests.pages.conftest import plain, search, start
from ui import nav
from ui.parts import score_distribution
from ui.parts import search as parts

TEXT = "\n\n".join(f"Abschnitt {i}\n\nRegel {i}: Die Frist für Antrag {i} beträgt {i + 2} Wochen." for i in range(12))


def test_the_hit_details_follow_the_table_before_the_distribution_is_searched(app_env, monkeypatch):
    store = open_store(path=str(app_env / "qdrant"))
    pipeline.ingest([pipeline.SourceFile("fristen.txt", TEXT.encode())], "documents", ChunkSettings(40, 0),
                    get_embedder("fake"), store=store)
    store.close()
    calls: list[tuple[str, tuple]] = []
    details, distribution = parts.hit_details, score_distribution.distribution

    def recorded_details(ws, hits, *args, **kwargs):
        calls.append(("details", tuple(h.chunk_id for h in hits)))
        return details(ws, hits, *args, **kwargs)

    def recorded_distribution(ws, run, *args, **kwargs):
        calls.append(("distribution", tuple(h.chunk_id for h in run.outcome.hits)))
        return distribution(ws, run, *args, **kwargs)

    monkeypatch.setattr(parts, "hit_details", recorded_details)
    monkeypatch.setattr(score_distribution, "distribution", recorded_distribution)
    at = start(nav.SEARCH.path)
    for query in ("Frist für Antrag 3", "Regel 9 Wochen"):
        calls.clear()
        search(at, query, top_k=3)
        assert [name for name, _ in calls] == ["details", "distribution"], calls
        assert calls[0][1] == calls[1][1]  # one result object: the table's hits
        table = at.dataframe[0].value
        labels = [plain(e.label) for e in at.expander if plain(e.label).startswith("#")]
        assert [label.split(" · ")[0] for label in labels] == [f"#{r}" for r in table["rank"]]
    # the rank curve's vertical title is whole: the short name of the score, not "weighted sum of nor…" cut
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    titles = {layer["encoding"]["y"]["title"] for spec in specs for layer in spec.get("layer", [])
              if layer.get("encoding", {}).get("y", {}).get("axis", {}).get("titleLimit")}
    assert titles == {"score (convex)"}, titles
    assert all(len(t) * 7 <= score_distribution.TITLE_LIMIT for t in titles)  # 7 px a character of an 11 px bold title


def test_query_words_are_those_the_keyword_search_matched(app_env, shared_data):
    """German and English documents: a query is analysed in both languages, each chunk was indexed in its own, so
    "die" (a German stop word, an English stem) matched no German chunk and is not listed as a query word."""
    from tests.pages.conftest import PDF, upload

    at = upload(start(), shared_data, PDF, "pdfs/crazyones.pdf").switch_page(nav.SEARCH.path).run()
    assert at.session_state["workspace"].store.analyzer("documents").languages == ("de", "en")
    search(at, "Wo stehen die Seitenzahlen?", top_k=10)
    table = at.dataframe[0].value
    words = [set(filter(None, cell.split(", "))) for cell in table["query words in chunk"]]
    assert any("Seitenzahlen" in w for w in words), words
    assert not any({"die", "Wo"} & w for w in words), words  # stop words: matched nothing
    for rank, hit in enumerate(at.session_state["search"].outcome.hits, 1):
        at.session_state[f"hit-{rank}-{hit.chunk_id}"] = True  # each hit's details, opened
    at.run()
    details = [plain(c.value) for c in at.caption if "query word" in plain(c.value)]
    assert details and not any("in it: die" in d or ", die" in d for d in details), details
    unmatched = [d for d in details if "no query word in it" in d]  # 20 chunks: not "not in its top 50"
    assert unmatched and all("keyword list: no query word matches it" in d for d in unmatched), unmatched
