"""Who may change where the data lives and which servers are used, and which key goes where (AppTest)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.pages.conftest import APP, start, texts, upload

SECRET = "sk-operator-secret-0123456789"


def labels(at) -> list[str]:
    return [t.label for t in at.sidebar.text_input]


def test_without_ui_settings_visitors_cannot_change_locations_or_servers(app_env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    at = start()
    assert not {"Folder", "Server URL", "Ollama host", "OpenAI-compatible base URL", "OpenAI API key"} & set(labels(at))
    assert "Set by the operator" in texts(at.sidebar.caption)
    ollama, openai, key = at.session_state["workspace"].servers
    assert (openai, key) == ("https://api.openai.com/v1", SECRET)  # the operator's pair, to its own URL
    assert SECRET not in str(at._tree)


@pytest.fixture
def editable(app_env, monkeypatch):
    monkeypatch.setenv("RAG_UI_SETTINGS", "1")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://llm.operator:8000")
    return app_env


def test_a_typed_base_url_gets_no_configured_key(editable):
    at = start()
    assert {"Folder", "Ollama host", "OpenAI-compatible base URL", "OpenAI API key"} <= set(labels(at))
    assert at.session_state["workspace"].servers[1:] == ("http://llm.operator:8000", SECRET)
    at.text_input(key="openai_base_url").set_value("http://visitor.example:9000").run()
    assert at.session_state["workspace"].servers[1:] == ("http://visitor.example:9000", "")
    at.text_input(key="openai_api_key").set_value("visitor-key").run()
    assert at.session_state["workspace"].servers[2] == "visitor-key"
    at.text_input(key="openai_base_url").set_value("http://LLM.operator:8000/").run()  # the same URL, written otherwise
    at.text_input(key="openai_api_key").set_value("").run()
    assert at.session_state["workspace"].servers[2] == SECRET
    assert SECRET not in str(at._tree)


def test_a_typed_qdrant_server_gets_no_configured_key(editable, monkeypatch):
    monkeypatch.setenv("QDRANT_API_KEY", SECRET)
    monkeypatch.setattr("ui.resources.open_store", lambda **kw: (_ for _ in ()).throw(AssertionError(kw)))
    sent = {}

    def record(kind, target, api_key=""):
        sent[target] = api_key
        from rag.errors import StoreUnavailableError

        raise StoreUnavailableError("recorded")

    monkeypatch.setattr("ui.resources.store", record)
    at = start()
    at.radio(key="location_kind").set_value("server").run()
    at.text_input(key="qdrant_url").set_value("http://visitor.example:6333").run()
    assert sent["http://visitor.example:6333"] == ""
    monkeypatch.setenv("QDRANT_URL", "http://qdrant.operator:6333")
    at.text_input(key="qdrant_url").set_value("http://qdrant.operator:6333").run()
    assert sent["http://qdrant.operator:6333"] == SECRET


@pytest.mark.parametrize("folder", ["/tmp/rag-outside", "../outside", "/etc"])
def test_a_folder_outside_the_data_root_is_refused_and_not_created(editable, folder):
    at = start()
    at.text_input(key="qdrant_path").set_value(folder).run()
    assert "outside the data root" in texts(at.sidebar.error)
    assert not (editable.parent / "outside").exists() and not __import__("os").path.exists("/tmp/rag-outside")


def test_a_folder_inside_the_data_root_is_opened(editable):
    at = start()
    at.text_input(key="qdrant_path").set_value("zweiter-speicher").run()
    assert not at.sidebar.error
    assert (editable / "zweiter-speicher").is_dir()
    assert at.session_state["workspace"].location == str(editable / "zweiter-speicher")


def test_a_model_folder_outside_the_data_root_is_refused(app_env):
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["embedder_spec"] = "local:/usr/lib"  # as if typed: the box accepts new options
    at.run()
    assert "outside the data root" in texts(at.sidebar.error)
    assert at.session_state["workspace"].spec == "fake"


def test_a_refused_model_folder_is_never_loaded_by_an_ingest(app_env, shared_data, monkeypatch):
    """The sidebar's refusal holds for the Upload page too: the ingest uses the operator's embedder, and the
    collection records it, not the typed folder (the loader is never asked for it)."""
    from rag import embeddings
    from ui import resources

    resources.embedder.clear()  # embedders cached by earlier tests are not asked for again
    asked = []
    original = embeddings.get_embedder
    monkeypatch.setattr("ui.resources.get_embedder", lambda spec, **kw: asked.append(spec) or original(spec, **kw))
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["embedder_spec"] = "local:/outside/model"
    at.run()
    assert "outside the data root" in texts(at.sidebar.error)
    upload(at.switch_page("app_pages/upload.py").run(), shared_data, "pdfs/crazyones.pdf")
    assert not at.exception, at.exception
    assert "fake" in asked and "local:/outside/model" not in asked, asked
    info = next(c for c in at.session_state["workspace"].collections if c.points)
    assert info.embedder.startswith("fake"), info.embedder


def test_the_embedder_loader_refuses_a_model_folder_outside_the_data_root(app_env):
    from rag.errors import InvalidSettingsError
    from ui import resources

    with pytest.raises(InvalidSettingsError, match="outside the data root"):
        resources.embedder("local:/outside/model")


@pytest.mark.parametrize("text,error", [
    ('OPENAI_API_KEY = "sk-operator-secret-0123456789\n', "The secrets file is malformed"),  # an unclosed quote
    ('RAG_UI_SETTINGS = "maybe"\n', "RAG_UI_SETTINGS='maybe' is not one of"),  # well-formed, a malformed value
    ("", None),  # an empty file: nothing set
])
def test_a_malformed_secrets_file_is_one_clear_error_not_no_keys(tmp_path, monkeypatch, text, error):
    import streamlit as st
    from streamlit import config
    from streamlit.runtime.secrets import Secrets

    from rag.errors import InvalidSettingsError
    from ui import settings

    (tmp_path / "secrets.toml").write_text(text, encoding="utf-8")
    original = config.get_option("secrets.files")
    config.set_option("secrets.files", [str(tmp_path / "secrets.toml")])
    monkeypatch.setattr(st, "secrets", Secrets())
    monkeypatch.setenv("RAG_UI_SETTINGS", "")  # unset; and Streamlit copies secrets into os.environ: undone after
    try:
        if error is None:
            assert not settings.ui_settings_allowed() and not settings.key_is_set(settings.rag_settings.OPENAI)
            return
        with pytest.raises(InvalidSettingsError, match=error) as raised:
            settings.check()
        assert SECRET not in str(raised.value) and "\n" not in str(raised.value)
    finally:
        config.set_option("secrets.files", original)
