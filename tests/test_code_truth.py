"""Comments, docstrings, help texts, the README and docs/ say what is true today: every `rag.`/`ui.` name they
mention exists, and the numbers a help text states come from the code."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from rag.retrieval import SearchRequest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*ROOT.glob("rag/**/*.py"), *ROOT.glob("ui/**/*.py"), *ROOT.glob("app_pages/*.py"),
                  *ROOT.glob("bench/*.py"), *ROOT.glob("tests/**/*.py"), ROOT / "app.py", ROOT / "README.md",
                  *ROOT.glob("docs/*.md")])
SOURCES.remove(Path(__file__).resolve())  # this file names missing modules on purpose
SOURCES.remove(ROOT / "tests" / "test_architecture.py")  # plants a tree of modules that do not exist
DOTTED = re.compile(r"(?<![\w./])(?:rag|ui)(?:\.[A-Za-z_]\w*)+")


def resolves(name: str) -> bool:
    """Return whether a dotted name is a module, or an attribute chain on the longest module prefix of it."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def mentions() -> dict[str, list[str]]:
    """Return every rag./ui. name written in the sources, the README and docs/, with where it is written."""
    found: dict[str, list[str]] = {}
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        for match in DOTTED.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.setdefault(match.group(0).rstrip("."), []).append(f"{path.relative_to(ROOT)}:{line}")
    return found


def test_every_rag_or_ui_name_in_comments_docstrings_the_readme_and_docs_exists():
    missing = {name: where for name, where in mentions().items() if not resolves(name)}
    assert not missing, "names that no longer exist: " + "; ".join(f"{n} ({', '.join(w[:3])})"
                                                                   for n, w in sorted(missing.items()))


PATH = re.compile(r"(?<![\w./])((?:rag|ui|app_pages|bench|tests)/[\w/]*\w\.py)\b")
MODULE_ROW = re.compile(r"(?:^|\s{2,})([a-z_]+)\s{2,}\S", re.MULTILINE)  # "chunks   statistics, flags, ..."


def written_paths(sources: list[Path]) -> dict[str, list[str]]:
    """Return every project file path (rag/..., ui/..., tests/... .py) the sources write, with where."""
    found: dict[str, list[str]] = {}
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for match in PATH.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.setdefault(match.group(1), []).append(f"{path.name}:{line}")
    return found


def listed_modules(package: Path) -> list[str]:
    """Return the module names a package's docstring lists as rows ("name   what it holds")."""
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    return MODULE_ROW.findall(docstring)


def test_every_file_path_in_comments_and_docstrings_exists():
    """The README is left out here: its map of the code moves to docs/ on the housedocs branch."""
    sources = [path for path in SOURCES if path.suffix == ".py"]
    missing = {p: where for p, where in written_paths(sources).items() if not (ROOT / p).exists()}
    assert not missing, "paths that do not exist: " + "; ".join(f"{p} ({', '.join(w[:3])})"
                                                                for p, w in sorted(missing.items()))


def test_every_module_a_package_docstring_lists_exists():
    stale = [f"{package.relative_to(ROOT)}: {name}" for package in sorted(ROOT.glob("rag/**/__init__.py"))
             for name in listed_modules(package.parent)
             if not (package.parent / f"{name}.py").exists() and not (package.parent / name).is_dir()]
    assert not stale, "modules listed that do not exist: " + "; ".join(stale)


DOC_PHRASE = re.compile(r'\b(docs/[\w-]+\.md),?\s+\(?["“]([^"”\n]+)["”]')  # docs/benchmarks.md, "PDF text"
README_MENTION = re.compile(r'(?<![\w"\'/])README(?!\.md)(?:,?\s+\(?["“]([^"”\n]+)["”])?')


def pointers(sources: list[Path]) -> list[str]:
    """Return the places in the code that send a reader to the README or a docs/ page for a section or phrase
    that is not there (a "README" without a named section of it included)."""
    readme = ROOT / "README.md"
    sections = {line.lstrip("#").strip() for line in readme.read_text(encoding="utf-8").splitlines()
                if line.startswith("#")}
    wrong = []
    for path in sources:
        text, where = path.read_text(encoding="utf-8"), path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        for match in README_MENTION.finditer(text):
            if match.group(1) not in sections:
                wrong.append(f"{where}:{text.count(chr(10), 0, match.start()) + 1}: README "
                             f"{match.group(1) or '(no section named)'}")
        for match in DOC_PHRASE.finditer(text):
            page = ROOT / match.group(1)
            said = " ".join(page.read_text(encoding="utf-8").split()) if page.exists() else ""
            if " ".join(match.group(2).split()) not in said:
                wrong.append(f"{where}:{text.count(chr(10), 0, match.start()) + 1}: "
                             f"{match.group(1)} has no “{match.group(2)}”")
    return wrong


def test_the_code_sends_readers_to_sections_that_exist():
    """Help texts and comments that name the README or a docs/ page name a section (or a phrase) found there; the
    README's measurements moved to docs/, so a bare "see the README" sends the reader to the wrong place."""
    code = [path for path in SOURCES if path.suffix == ".py" and path.parts[len(ROOT.parts)] in
            ("rag", "ui", "app_pages", "bench", "app.py") and path.name != "samples.py"]  # samples: a folder's README
    assert not pointers(code), "\n".join(pointers(code))


def test_the_pointer_check_finds_a_bare_readme_and_a_missing_phrase(tmp_path):
    (tmp_path / "m.py").write_text('# measured: README "Parent–child retrieval"; docs/benchmarks.md, "No such"\n'
                                   '# see docs/benchmarks.md, "PDF text"\n', encoding="utf-8")
    assert [w.partition(": ")[2] for w in pointers([tmp_path / "m.py"])] == [
        "README Parent–child retrieval", "docs/benchmarks.md has no “No such”"]


def test_the_checks_find_a_missing_path_and_a_missing_listed_module(tmp_path):
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "__init__.py").write_text('"""Reports.\n\nchunks   statistics\ntext     one line"""\n')
    assert listed_modules(tmp_path / "reports") == ["chunks", "text"]
    (tmp_path / "evaluate.py").write_text('"""python -m rag compare ...   (rag/cli_compare.py)"""\n')
    assert list(written_paths([tmp_path / "evaluate.py"])) == ["rag/cli_compare.py"]


def test_the_check_finds_a_name_that_does_not_exist():
    assert any(path.parent.name == "docs" for path in SOURCES), "docs/*.md are read too"
    assert resolves("rag.retrieval.fusion.RRF_K") and resolves("rag.chunking.toc")
    assert not resolves("rag.sparse") and not resolves("rag.store_search.MODES") and not resolves("rag.fusion")


def test_the_rrf_help_states_the_score_the_engine_gives():
    """The Search page's RRF threshold help says what a first rank in one list scores: the engine must agree."""
    from rag import pipeline
    from rag.embeddings.fake import FakeEmbedder
    from rag.reports.hits import SCALES
    from rag.store.open import open_store

    store, embedder = open_store(":memory:"), FakeEmbedder()
    pipeline.ingest([pipeline.SourceFile("a.md", "# Titel\n\nPasswörter werden gehasht.\n".encode())], "c",
                    embedder=embedder, store=store)
    # in the dense list only: no query word is in the chunk
    (hit,) = store.search("c", embedder.embed_query(["Wolken"])[0], None,
                          SearchRequest(top_k=1, mode="hybrid", fusion="rrf"), query_text="Wolken")
    stated = re.search(r"a first rank in one list scores ([\d.]+)", SCALES["rrf"].help)
    assert stated, SCALES["rrf"].help
    assert hit.score == pytest.approx(float(stated.group(1)), abs=0.005)


def test_text_is_shortened_by_one_rule_in_the_cli_and_the_pages():
    from rag import http
    from rag.cli import common
    from rag.words import shorten as preview
    from ui import render

    assert common.preview is render.preview is http.shorten is preview
    assert preview("Ein  langer\n Satz über Verträge", 12) == "Ein langer …" and len(preview("x" * 300)) == 200
    assert preview("kurz", 12) == "kurz"


def test_tests_share_the_one_fake_embedder():
    """tests/conftest.py once had its own hash embedder next to rag.embeddings.fake; the tests use the project's."""
    from rag.embeddings.fake import FakeEmbedder
    from tests.conftest import fake_embedder

    embedder = fake_embedder(16, "ollama:nomic-embed-text")
    assert isinstance(embedder, FakeEmbedder) and embedder.model_id == "ollama:nomic-embed-text"
    here = Path(__file__)
    sources = [p.read_text(encoding="utf-8") for p in here.parent.rglob("*.py") if p.name != here.name]
    assert not any("class HashEmbedder" in source for source in sources)
