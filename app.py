"""RAG Lab: upload documents, see how they are chunked, search them in Qdrant, preview the LLM context.

Run with `make run` (or `streamlit run app.py`). The sidebar, drawn here on every page, chooses the
collection, the embedder and where the data lives; each page in app_pages/ (listed in ui/nav.py) only
draws its own part.
"""

from __future__ import annotations

import streamlit as st

from rag.errors import RagError
from ui import errors, nav, resources, settings, shutdown, sidebar, state

shutdown.register()  # Ctrl-C or SIGTERM: jobs cancelled at a batch boundary, the process gone in about a second

st.set_page_config(page_title="RAG Lab", page_icon=":material/biotech:", layout="wide")
# Denser than Streamlit's defaults: analysts compare numbers, so less air above the title and smaller metrics.
st.html(
    "<style>[data-testid='stMainBlockContainer']{padding-top:2.2rem;padding-bottom:3rem}"
    "[data-testid='stMetricValue']{font-size:1.6rem}</style>"
)


def navigation():
    """Return the app's navigation: every page of ui.nav, grouped by section."""
    sections: dict[str, list] = {}
    for info in nav.PAGES:
        page = st.Page(info.path, title=info.title, icon=info.icon, default=info is nav.DEFAULT)
        sections.setdefault(info.section, []).append(page)
    return st.navigation(sections)


page = navigation()
try:
    settings.check()  # a typo in RAG_MAX_FILE_MB, a malformed server URL or secrets.toml is said at start
except RagError as error:
    st.title("RAG Lab")
    errors.show(error)
    st.stop()
warm_up = resources.warm_up()
loading = warm_up.loading()
# The first page after a start may wait for the model (its import, then its weights: 10 s and more under load), and
# Streamlit's own running sign is hidden with its toolbar (.streamlit/config.toml): the page says so where it will
# appear, before the import starts (it holds the interpreter for seconds: a spinner shown after a delay comes too late).
note = st.empty()
if loading:
    note.status(f"Loading the embedding model ({loading})…", state="running")
warm_up.start()
try:
    workspace = sidebar.render()
    if workspace is None:
        st.title("RAG Lab")
        st.error("RAG Lab cannot open its Qdrant store. The sidebar says why; fix the data location there.")
        st.stop()
    state.put(state.WORKSPACE, workspace)
    page.run()
finally:
    note.empty()
