"""The Embedding map page with AppTest: the scatter, its colours, the query and its hits, sampling, the cache, the
clicked chunk, and document text kept out of Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

from rag import pipeline
from rag.chunking.chunker import ChunkSettings
from rag.embeddings import get_embedder
from rag.reports.embedding_map import available_methods
from rag.store.open import open_store
from tests.pages.conftest import PDF, button, plain, search, settled, start, texts, upload
from ui import nav
from ui.parts import embedding_map as map_parts

QUERY = "Welche Schriftgröße verwendet die Klasse?"
ASVS = "markdown/asvs-de-V2-Authentication.md"


def map_page(at):
    return at.switch_page(nav.EMBEDDING_MAP.path).run()


def points(at):
    """Return the map's chunk rows (the largest dataset of the chart) as a DataFrame."""
    chart = at.get("vega_lite_chart")[0]
    frames = [convert_arrow_bytes_to_pandas_df(d.data.data) for d in chart.proto.datasets]
    return max(frames, key=len)


def test_map_of_a_collection_coloured_by_document_then_heading(app_env, shared_data):
    at = map_page(upload(start(), shared_data, PDF, "pdfs/crazyones.pdf"))
    assert not at.exception, at.exception
    assert at.button_group(key="map_method").options == [map_parts.METHOD_LABELS[m] for m in available_methods()]
    frame = points(at)
    assert len(frame) == 21 and set(frame["document"]) == {"hausarbeit-jura.pdf", "crazyones.pdf"}
    assert {"heading path", "chunk", "starts with"} <= set(frame)  # the tooltip's fields
    assert not frame["is_hit"].any()  # no query yet
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    assert "PC 1 (" in json.dumps(spec) and '"title": "document"' in json.dumps(spec)
    caption = plain(texts(at.caption))
    assert "all 21 chunks of 'documents' · PCA · the two axes explain" in caption and "colour: 2 documents" in caption
    at.button_group(key="map_colour").set_value("heading").run()
    assert "\"title\": \"heading\"" in at.get("vega_lite_chart")[0].proto.spec
    assert set(points(at)["colour"]) >= {"Klassenoptionen", "Einleitung", "(no heading)"}


def test_the_last_search_is_marked_with_its_hits(app_env, shared_data):
    at = upload(start(), shared_data, PDF).switch_page(nav.SEARCH.path).run()
    search(at, QUERY)
    hits = at.dataframe[0].value
    at = map_page(at)
    assert at.text_input(key="map_query").value == QUERY  # taken from the last search
    frame = points(at)
    marked = frame[frame["is_hit"] == 1].sort_values("hit")
    assert list(marked["hit"]) == [1, 2, 3, 4, 5] and list(marked["chunk"]) == list(hits["chunk"])
    assert '"cross"' in at.get("vega_lite_chart")[0].proto.spec  # the query point
    assert "5 hits of “Welche Schriftgröße verwendet die Klasse?” (Hybrid convex, top 5) ringed" in plain(
        texts(at.caption))  # the last search's mode
    at.selectbox(key="map_mode").set_value("sparse").run()
    assert "found by its keywords" in texts(at.caption)
    at.text_input(key="map_query").set_value("").run()
    assert not points(at)["is_hit"].any() and at.slider(key="map_top_k").disabled


@pytest.mark.slow
def test_a_sample_of_a_larger_collection_says_so_and_keeps_the_hits(app_env, shared_data):
    store = open_store(path=str(app_env / "qdrant"))
    files = [pipeline.SourceFile(Path(n).name, (shared_data / n).read_bytes()) for n in (PDF, ASVS)]
    pipeline.ingest(files, "documents", ChunkSettings(60, 0), get_embedder("fake"), store=store)
    total = store.collections()[0].points
    store.close()
    at = map_page(start())
    assert len(points(at)) == total > 100  # under the default sample of 2000: every chunk, no note
    at.text_input(key="map_query").set_value("Passwörter Länge").run()
    at.slider(key="map_sample").set_value(100).run()
    frame = points(at)
    outside = len(frame) - 100
    assert 0 <= outside <= 5 and (frame["is_hit"] == 1).sum() == 5  # the sample plus every hit
    assert f"Showing a random sample of 100 of {total:,} chunks" in plain(texts(at.caption))
    assert f"{len(frame)} of {total:,} chunks of 'documents'" in plain(texts(at.caption))


@pytest.mark.slow
def test_the_map_is_cached_until_the_store_changes(app_env, shared_data, monkeypatch):
    at = map_page(upload(start(), shared_data, PDF))
    calls = []
    original = map_parts.embedding_map
    monkeypatch.setattr(map_parts, "embedding_map", lambda *a, **k: calls.append(a) or original(*a, **k))
    at.run()
    at.button_group(key="map_colour").set_value("heading").run()  # colour is drawing only
    assert calls == []
    at.slider(key="map_sample").set_value(1000).run()
    assert len(calls) == 1


@pytest.mark.slow
def test_clicking_a_point_shows_the_chunk_as_text(app_env):
    folder = app_env / "samples"
    folder.mkdir()
    (folder / "evil.md").write_text("# Titel <b>x</b>\n<script>alert(1)</script> **fett** [link](http://x)\n",
                                    encoding="utf-8")
    at = start()
    settled(button(at, "Load the 1 sample documents").click())
    at = map_page(at)
    row = points(at).iloc[0]
    # chart data: Vega shows it as text (Markdown is read without inline tags, rag.documents.markdown; the script
    # element is kept as text)
    assert row["starts with"].startswith("# Titel x <script>")
    at.session_state["map_chart"] = {"selection": {"chunk": [{"document_id": row["document_id"],
                                                               "chunk": int(row["chunk"])}]}}
    at.run()
    assert "<script>alert(1)</script>" in at.code[0].value
    assert "<script>" not in "".join(m.value for m in at.markdown)
    assert "".join(h.proto.body for h in at.get("html")).count("<script>") == 0


@pytest.mark.slow
def test_tsne_when_installed_and_an_empty_store(app_env, shared_data):
    at = map_page(start())
    assert "nothing to map" in texts(at.info)
    if "tsne" not in available_methods():
        return
    at = map_page(upload(start(), shared_data, PDF))
    at.button_group(key="map_method").set_value("tsne").run()
    assert not at.exception and "· t-SNE ·" in texts(at.caption)
    assert "distorts the distances between groups" in texts(at.caption)


def test_the_map_marks_hits_as_search_finds_them_splits_a_one_title_file_and_fits_its_legend(app_env):
    sections = "\n\n".join(f"## Abschnitt {i}\n\n" + f"Satz {i} über ein eigenes Thema. " * 30 for i in range(1, 5))
    long_name = "ein-sehr-langer-dateiname-fuer-das-betriebshandbuch-2026.md"
    at = start()
    at.file_uploader[0].set_value([(long_name, f"# Betriebshandbuch\n\n{sections}".encode(), "text/markdown")])
    at.run()
    settled(button(at, "Ingest").click())
    at = map_page(at)
    assert not at.exception, at.exception
    assert at.selectbox(key="map_mode").value == "hybrid-convex"  # Search's default for this collection, not Dense
    (label,) = set(points(at)["colour"])
    assert len(label) <= map_parts.LEGEND_CHARS[0] and label.startswith("ein-sehr") and label.endswith("2026.md")
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    legend = spec["layer"][0]["encoding"]["color"]["legend"]
    assert legend["labelLimit"] >= 7 * len(label)  # about 7 px a character: Vega does not cut it again
    at.button_group(key="map_colour").set_value("heading").run()
    assert {f"Abschnitt {i}" for i in range(1, 5)} <= set(points(at)["colour"])  # not one "Betriebshandbuch"
