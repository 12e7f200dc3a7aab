"""Every page of the app: its file, title, icon and section. app.py builds the navigation from this list, and pages
and tests link to a page by its constant (nav.SEARCH.path), never by a typed path.

The files live in app_pages/, not pages/: a pages/ folder beside app.py switches Streamlit into its older
multipage mode, which would run a deep-linked page such as /search without app.py on a fresh server.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageInfo:
    path: str  # relative to the project root, as st.Page and st.page_link want it
    title: str
    icon: str
    section: str


UPLOAD = PageInfo("app_pages/upload.py", "Upload", ":material/upload_file:", "Documents")
LIBRARY = PageInfo("app_pages/library.py", "Library", ":material/folder_open:", "Documents")
CHUNKS = PageInfo("app_pages/chunks.py", "Chunks", ":material/view_agenda:", "Documents")
SEARCH = PageInfo("app_pages/search.py", "Search", ":material/search:", "Retrieval")
CONTEXT = PageInfo("app_pages/context.py", "Context preview", ":material/article:", "Retrieval")
COMPARE = PageInfo("app_pages/compare.py", "Compare", ":material/compare_arrows:", "Retrieval")
EMBEDDING_MAP = PageInfo("app_pages/embedding_map.py", "Embedding map", ":material/scatter_plot:", "Retrieval")
EVALUATE = PageInfo("app_pages/evaluate.py", "Evaluate", ":material/analytics:", "Retrieval")
EXPERIMENTS = PageInfo("app_pages/experiments.py", "Experiments", ":material/history:", "Retrieval")
PAGES = (UPLOAD, LIBRARY, CHUNKS, SEARCH, CONTEXT, COMPARE, EMBEDDING_MAP, EVALUATE, EXPERIMENTS)
DEFAULT = UPLOAD
