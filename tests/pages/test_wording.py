"""Words and small pictures a browser walk-through found wrong: which tokenizer a number counts in, a histogram of
one chunk, counts in the singular, rounded shares that add up, the collection a sweep searched, a stale summary."""

from __future__ import annotations

import json

from tests.pages.conftest import button, plain, start, texts
from ui import nav


def one_chunk_document(at):
    """Ingest a document of one word: one chunk of one token."""
    at.file_uploader[0].set_value([("one.md", b"Example", "text/markdown")])
    at.run()
    button(at, "Ingest").click().run()
    at.switch_page(nav.CHUNKS.path).run()
    assert not at.exception, at.exception
    return at


def charts(at) -> list[dict]:
    return [json.loads(e.proto.spec) for e in at.main if getattr(e, "type", "") == "vega_lite_chart"]


def test_the_chunks_page_says_which_tokenizer_counts_each_number(app_env):
    at = one_chunk_document(start())
    metrics = {m.label: m for m in at.metric}
    assert {"mean (cl100k)", "max (cl100k)"} <= set(metrics), list(metrics)
    caption = next(c for c in texts(at.caption).splitlines() if c.startswith("Flagged"))
    cl100k, model = caption.split("Model tokens", 1)
    assert "mean, max" in cl100k and "cl100k" in cl100k and "model tok." in model  # the note is the model's own
    columns = json.loads(at.dataframe[0].proto.columns)
    assert columns["model tokens"]["label"] == "model tok."  # "model tokens" was cut to "model toke"
    caption_of = {plain(c.value) for c in at.caption}
    assert not any("1 tokens" in c for c in caption_of)


def test_a_histogram_of_one_chunk_has_bins_that_hold_it(app_env):
    at = one_chunk_document(start())
    table = at.dataframe[0].value
    assert list(table["tokens"]) == [1]
    histograms = [c for c in charts(at) if c["layer"][0]["encoding"]["x"]["field"] == "tokens"]
    assert histograms
    for spec in histograms:  # Vega-Lite bins [1, 1] into bins of no width: no bar was drawn
        low, high = spec["layer"][0]["encoding"]["x"]["bin"]["extent"]
        assert low <= 1 < high
