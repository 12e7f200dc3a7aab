"""A chunk that continues a Markdown table shows the header rows it repeats wherever its text is shown (issue 39,
item 6): the model, the keyword index and the LLM read them before the chunk's text, so the pages show them too,
marked as repeated and as text, and "model tok." counts what is shown."""

from __future__ import annotations

from rag.embeddings.fake import FakeEmbedder
from tests.pages.conftest import button, plain, search, select, settled, start, table, texts
from ui import nav

HEADER = "| Datentyp | Format | Beschreibung |\n|---|---|---|"
ROWS = "\n".join(f"| Feld{i} | `string` | Wert Nummer {i} beschreibt das Feld ausführlich genug. |" for i in range(40))
MARKDOWN = f"# Datenformate\n\nDie Tabelle nennt jedes Feld.\n\n{HEADER}\n{ROWS}\n\nEnde.\n".encode()


def _ingested(chunk_size: int = 200):
    at = start()
    at.number_input(key="upload_chunk_size").set_value(chunk_size).run()
    at.file_uploader[0].set_value([("formate.md", MARKDOWN, "text/markdown")])
    at.run()
    settled(button(at, "Ingest").click())
    assert not at.exception, at.exception
    return at


def _codes(at) -> list[str]:
    return [plain(c.value) for c in at.code]


def test_the_chunks_page_shows_the_header_a_chunk_repeats_and_counts_it(app_env):
    at = _ingested().switch_page(nav.CHUNKS.path).run()
    assert not at.exception, at.exception
    frame = table(at, "chunk_table").value
    assert frame.loc[frame["#"] == 2, "table header"].item() == "from #0"  # the table starts in chunk 0
    assert frame.loc[frame["#"] == 0, "table header"].item() == ""
    ws = at.session_state["workspace"]
    chunks = ws.document_chunks(ws.documents()[0].document_id)
    content = next(c.content for c in chunks if c.chunk_index == 2)
    counted = FakeEmbedder(64).count_tokens(f"{HEADER}\n{content}")
    assert frame.loc[frame["#"] == 2, "model tokens"].item() == counted  # what the model reads, header included

    select(at, "chunk_table", 2)
    assert "Table header repeated from chunk #0" in texts(at.caption)
    assert HEADER in _codes(at) and content in _codes(at)
    assert not at.markdown or all("Datentyp" not in plain(m.value) for m in at.markdown)  # text, never Markdown


def test_search_hits_and_the_context_preview_show_the_repeated_header(app_env):
    at = _ingested().switch_page(nav.SEARCH.path).run()
    at.button_group(key="search_mode").set_value("sparse").run()
    search(at, "Feld33", top_k=3)
    first = at.session_state["search"].outcome.hits[0]
    assert first.chunk_index > 1 and first.payload["table_header"] == HEADER  # a row far into the table
    assert "Table header repeated from chunk #0" in texts(at.caption)
    assert HEADER in _codes(at)

    at.switch_page(nav.CONTEXT.path).run()
    assert not at.exception, at.exception
    included = at.dataframe[0].value
    assert included.loc[included["chunk"] == first.chunk_index, "table header"].item() > 0  # its header's tokens
    sent = plain(at.code[0].value)  # what the LLM receives: the header rows, then the chunk
    assert f"{HEADER}\n{first.content}" in sent


def test_the_context_preview_counts_no_header_as_zero_not_as_a_missing_value(app_env):
    at = _ingested().switch_page(nav.SEARCH.path).run()
    at.button_group(key="search_mode").set_value("sparse").run()
    search(at, "Tabelle nennt jedes", top_k=3)
    hits = at.session_state["search"].outcome.hits
    assert hits[0].chunk_index == 0 and not hits[0].payload.get("table_header")  # the table's start repeats none

    at.switch_page(nav.CONTEXT.path).run()
    assert not at.exception, at.exception
    included = at.dataframe[0].value
    assert not included["table header"].isna().any(), included  # a missing value is drawn as "None" in the table
    assert included.loc[included["chunk"] == 0, "table header"].item() == 0
