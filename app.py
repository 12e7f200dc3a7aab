"""RAG Lab: upload documents, see how they are chunked, search them in Qdrant, preview the LLM context.

Run with `make run` (or `streamlit run app.py`). The sidebar, drawn here on every page, chooses the
collection, the embedder and where the data lives; each page in views/ only draws its own part.
(views/, not pages/: Streamlit treats a pages/ folder as its older multipage app and would run a
deep-linked page such as /search without this file on a fresh server.)
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from rag.errors import RagError
from rag.settings import check_environment
from ui import resources, sidebar, state
from ui.render import md

PAGES = Path(__file__).resolve().parent / "views"

st.set_page_config(page_title="RAG Lab", page_icon=":material/biotech:", layout="wide")
# Denser than Streamlit's defaults: analysts compare numbers, so less air above the title and smaller metrics.
st.html(
    "<style>[data-testid='stMainBlockContainer']{padding-top:2.2rem;padding-bottom:3rem}"
    "[data-testid='stMetricValue']{font-size:1.6rem}</style>"
)


def navigation():
    """Return the app's navigation; the Evaluate page joins when its file exists."""
    sections = {
        "Documents": [
            st.Page("views/upload.py", title="Upload", icon=":material/upload_file:", default=True),
            st.Page("views/library.py", title="Library", icon=":material/folder_open:"),
            st.Page("views/chunks.py", title="Chunks", icon=":material/view_agenda:"),
        ],
        "Retrieval": [
            st.Page("views/search.py", title="Search", icon=":material/search:"),
            st.Page("views/context.py", title="Context preview", icon=":material/article:"),
            st.Page("views/compare.py", title="Compare", icon=":material/compare_arrows:"),
            st.Page("views/embedding_map.py", title="Embedding map", icon=":material/scatter_plot:"),
        ],
    }
    if (PAGES / "evaluate.py").is_file():
        sections["Retrieval"].append(st.Page("views/evaluate.py", title="Evaluate", icon=":material/analytics:"))
    return st.navigation(sections)


page = navigation()
try:
    check_environment()  # a typo in RAG_MAX_FILE_MB or a malformed server URL is said at start, not ignored
except RagError as error:
    st.title("RAG Lab")
    st.error(md(str(error)))
    st.stop()
resources.warm_up()
workspace = sidebar.render()
if workspace is None:
    st.title("RAG Lab")
    st.error("RAG Lab cannot open its Qdrant store. The sidebar says why; fix the data location there.")
    st.stop()
state.put(state.WORKSPACE, workspace)
page.run()
