"""Words and small pictures a browser walk-through found wrong: which tokenizer a number counts in, a histogram of
one chunk, counts in the singular, rounded shares that add up, the collection a sweep searched, a stale summary."""

from __future__ import annotations

import json

from tests.pages.conftest import button, plain, settled, start, texts
from ui import nav


def one_chunk_document(at):
    """Ingest a document of one word: one chunk of one token."""
    at.file_uploader[0].set_value([("one.md", b"Example", "text/markdown")])
    at.run()
    settled(button(at, "Ingest").click())
    at.switch_page(nav.CHUNKS.path).run()
    assert not at.exception, at.exception
    return at


def charts(at) -> list[dict]:
    return [json.loads(e.proto.spec) for e in at.main if getattr(e, "type", "") == "vega_lite_chart"]


def test_the_chunks_page_says_which_tokenizer_counts_each_number(app_env):
    at = one_chunk_document(start())
    metrics = {m.label: m for m in at.metric}
    assert {"mean (cl100k)", "max (cl100k)"} <= set(metrics), list(metrics)
    caption = next(c for c in texts(at.caption).splitlines() if c.startswith("Flagged"))
    cl100k, model = caption.split("Model tokens", 1)
    assert "mean, max" in cl100k and "cl100k" in cl100k and "model tok." in model  # the note is the model's own
    columns = json.loads(at.dataframe[0].proto.columns)
    assert columns["model tokens"]["label"] == "model tok."  # "model tokens" was cut to "model toke"
    caption_of = {plain(c.value) for c in at.caption}
    assert not any("1 tokens" in c for c in caption_of)


def test_a_histogram_of_one_chunk_has_bins_that_hold_it(app_env):
    at = one_chunk_document(start())
    table = at.dataframe[0].value
    assert list(table["tokens"]) == [1]
    histograms = [c for c in charts(at) if c["layer"][0]["encoding"]["x"]["field"] == "tokens"]
    assert histograms
    for spec in histograms:  # Vega-Lite bins [1, 1] into bins of no width: no bar was drawn
        low, high = spec["layer"][0]["encoding"]["x"]["bin"]["extent"]
        assert low <= 1 < high


# ---- Experiments: counts in the singular, the collection a sweep searched -------------------------------------

def outcome(query: str, rank: int | None) -> dict:
    hit = 1.0 if rank == 1 else 0.0
    return {"query": query, "line": 1, "documents": ["a.md"], "rank": rank, "score": None, "score_kind": None,
            "values": {"hit@1": hit, "mrr@1": hit}}


def kept_run(kind: str, ranks: list[int | None], rows: list[dict], settings: dict | None = None) -> tuple[dict, list]:
    run = {"schema": 1, "kind": kind, "created_at": "2026-12-03T05:26:15+00:00", "seconds": 14.6,
           "settings": {"query_set": "q.jsonl", "queries": len(ranks), "ks": [1], "embedder": "fake:64",
                        "documents": ["a.md", "b.md", "c.md"], **(settings or {})},
           "rows": rows, "best": 0}
    return run, [[outcome(f"Frage {i}", rank) for i, rank in enumerate(ranks)] for _ in rows]


def row(label: str, collection: str) -> dict:
    return {"label": label, "chunk_size": 350, "overlap": 50, "mode": "dense", "collection": collection,
            "metrics": {"hit@1": 0.5, "mrr@1": 0.5}}


def experiments(app_env, *runs):
    from rag.runs import RunLog, runs_path_of
    from rag.store.open import open_store

    log = RunLog(runs_path_of(open_store(path=str(app_env / "qdrant"))))
    for run, outcomes in runs:
        log.save(run, outcomes)
    return start(nav.EXPERIMENTS.path)


def test_experiments_count_one_question_in_the_singular(app_env):
    at = experiments(app_env, kept_run("eval", [None, 1, 1], [row("a", "documents")]),
                     kept_run("eval", [1, 1], [row("b", "documents")]))
    at.selectbox(key="experiments_a").set_value("1")
    at.selectbox(key="experiments_b").set_value("2").run()
    captions = texts(at.caption)
    assert "2 questions both ran; only A ran 1, only B 0." in captions
    assert "B better on 1 question, worse on 0, the same on 1 " in captions  # was "on 1 questions"


def test_the_run_list_names_the_collection_a_sweep_searched_as_stored(app_env):
    sweep = "sweep-9c30103c-cs200-ov50-fake"
    older = kept_run("sweep", [1, 1], [row("200/50 dense", sweep), row("350/50 dense", "xquad")])  # before settings
    kept = kept_run("sweep", [1, 1], [row("200/50 dense", sweep)], {"collection": "xquad"})  # kept the collection
    at = experiments(app_env, older, kept)
    runs = at.dataframe[0].value
    assert list(runs["collection"]) == ["xquad", "xquad"], runs  # was "3 documents"


# ---- Embedding map: the shares shown add up -------------------------------------------------------------------

def test_the_map_total_share_is_the_sum_of_the_shares_shown():
    import re

    import pandas as pd

    from rag.reports.embedding_map import EmbeddingMap
    from ui.parts import embedding_map as map_parts

    for explained in ((0.1166, 0.1107), (0.117, 0.111), (0.0549, 0.0549), (0.3, 0.2)):  # 11.7 + 11.1: 22.73 -> 22.7
        emap = EmbeddingMap("c", "pca", (), 0, False, explained=explained)
        titles = " ".join(map_parts.axis_titles(emap))
        caption = map_parts.caption(emap, pd.DataFrame({"document": ["a"]}), "document", "Dense", 5)
        parts = [float(p) for p in re.findall(r"\(([\d.]+)%", titles)]
        total = float(re.search(r"explain ([\d.]+)%", caption).group(1))
        assert len(parts) == 2 and round(sum(parts), 1) == total, (titles, caption)


# ---- Upload: a password retry updates the summary of the job it came from -------------------------------------

def test_a_file_opened_later_with_its_password_counts_in_the_older_summary(app_env, shared_data):
    from tests.pages.conftest import upload

    at = upload(start(), shared_data, "pdfs/crazyones.pdf", "pdfs/encrypted-file.pdf", "pdfs/invalid.pdf")
    labels = [plain(e.label) for e in at.expander]
    assert any(label.startswith("Done: 1 of 3 files stored in 'documents'") for label in labels), labels
    at.main.text_input[-1].set_value("test")
    settled(button(at, "Open and ingest").click())
    assert not at.exception, at.exception
    older = [e for e in at.expander if "of 3 files" in plain(e.label)]
    assert len(older) == 1, [plain(e.label) for e in at.expander]
    label = plain(older[0].label)
    assert label.startswith("Done: 2 of 3 files stored in 'documents'"), label  # was "1 of 3", stale
    assert label.endswith("(1 of them later, with its password)")
    assert older[0].proto.icon == ":material/warning:"  # invalid.pdf is still not stored
    assert "Stored later by a newer ingest: encrypted-file.pdf." in texts(at.caption)


def test_once_every_file_is_stored_the_older_job_loses_its_warning_mark(app_env, shared_data):
    from tests.pages.conftest import upload

    at = upload(start(), shared_data, "pdfs/crazyones.pdf", "pdfs/encrypted-file.pdf")
    at.main.text_input[-1].set_value("test")
    settled(button(at, "Open and ingest").click())
    (older,) = [e for e in at.expander if "of 2 files" in plain(e.label)]
    assert plain(older.label).startswith("Done: 2 of 2 files stored")
    assert older.proto.icon == ":material/check_circle:"


# ---- Counts: "2 files", never "2 file(s)" ---------------------------------------------------------------------

def written_texts(path) -> list[tuple[int, str]]:
    """Return the string literals of a module (f-strings' literal parts too) with their line, docstrings left out:
    what a page, a job line, a message or the command line may show."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and id(node) not in docstrings]


def test_no_text_the_app_or_the_cli_shows_writes_a_plural_in_parentheses():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    plural = re.compile(r"[A-Za-z]\((?:s|es)\)")  # "file(s)", "need(s)": rag.words.counted says "1 file", "2 files"
    found = [f"{path.relative_to(root)}:{line}: {text.strip()}"
             for path in sorted([*root.glob("rag/**/*.py"), *root.glob("ui/**/*.py"), *root.glob("app_pages/*.py"),
                                 root / "app.py"])
             for line, text in written_texts(path) if plural.search(re.sub(r"{{.*?}}|http\(s\)", "", text))]
    assert not found, "\n".join(found)


def test_no_text_picks_its_word_or_verb_by_a_count_of_one_by_hand():
    """`'s' if n > 1 else ''`, `"is" if n == 1 else "are"`, `'page' if n == 1 else 'pages'`: rag.words.counted and
    rag.words.plural (ui.render's) say them, one rule."""
    import ast
    from pathlib import Path

    def one_word(node: ast.expr) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and " " not in node.value.strip()

    def by_one(test: ast.expr) -> bool:
        return isinstance(test, ast.Compare) and any(isinstance(side, ast.Constant) and side.value == 1
                                                     for side in [test.left, *test.comparators])

    root = Path(__file__).resolve().parents[2]
    paths = sorted([*root.glob("rag/**/*.py"), *root.glob("ui/**/*.py"), *root.glob("app_pages/*.py"), root / "app.py"])
    found = [f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}" for path in paths
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.IfExp) and by_one(node.test) and one_word(node.body) and one_word(node.orelse)]
    assert len(paths) > 100, "the scan reads no code: it is broken"
    assert not found, "\n".join(found)
