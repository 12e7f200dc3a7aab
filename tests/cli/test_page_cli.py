"""`rag page`: a chunk's page(s) as a PNG with the chunk marked; bad input one line each."""

from __future__ import annotations

import io
import json
import shutil

from PIL import Image

from rag.documents.render import COLOURS
from tests.conftest import run


def amber_pixels(path) -> int:
    """Return how many pixels carry the chunk's outline colour (nothing on a plain page does)."""
    image = Image.open(io.BytesIO(path.read_bytes())).convert("RGB")
    return sum(1 for pixel in image.getdata() if all(abs(a - b) < 30 for a, b in zip(pixel, COLOURS["chunk"],
                                                                                       strict=True)))


def test_a_chunk_of_a_file_is_drawn_with_its_text_marked(shared_data, tmp_path, capsys):
    out = tmp_path / "chunk.png"
    code, printed, err = run(capsys, "page", str(shared_data / "pdfs/hausarbeit-jura.pdf"), "--chunk", "4",
                             "--out", str(out), "--width", "500")
    assert (code, err) == (0, "")
    assert printed.startswith(f"wrote {out}: page") and "chunk 4 marked" in printed
    image = Image.open(out)
    assert image.format == "PNG" and image.width == 500
    assert amber_pixels(out) > 100


def test_bad_input_is_one_line_saying_what_to_do(shared_data, tmp_path, capsys):
    pdf, out = str(shared_data / "pdfs/hausarbeit-jura.pdf"), str(tmp_path / "x.png")
    code, _, err = run(capsys, "page", pdf, "--chunk", "999", "--out", out)
    assert code == 1 and err.count("\n") == 1 and "chunk 999 is past the end. Choose one of them" in err
    code, _, err = run(capsys, "page", pdf, "--chunk", "0", "--page", "40", "--out", out)
    assert code == 1 and err.count("\n") == 1 and "page 40 is past its end. Choose a page from 1 to 8" in err
    locked = str(shared_data / "pdfs/encryption__r6-user-password.pdf")
    code, _, err = run(capsys, "page", locked, "--chunk", "0", "--out", out)
    assert code == 1 and err.count("\n") == 1 and "--password" in err
    code, _, err = run(capsys, "page", locked, "--chunk", "0", "--out", out, "--password", "asdfzxcv")
    assert (code, err) == (0, "") and amber_pixels(tmp_path / "x.png") > 0
    text = tmp_path / "notes.txt"
    text.write_text("Berlin liegt an der Spree.", encoding="utf-8")
    code, _, err = run(capsys, "page", str(text), "--chunk", "0", "--out", out)
    assert code == 1 and err.count("\n") == 1 and "has no pages to draw" in err
    code, _, err = run(capsys, "page", str(tmp_path / "missing.pdf"), "--chunk", "0", "--out", out)
    assert code == 1 and "no such file" in err


def test_a_stored_chunk_is_drawn_from_the_kept_file_by_its_title(shared_data, tmp_path, capsys):
    store = str(tmp_path / "qdrant")
    pdf = tmp_path / "Bericht.pdf"
    shutil.copy(shared_data / "pdfs/hausarbeit-jura.pdf", pdf)
    assert run(capsys, "ingest", str(pdf), "--collection", "t", "--embedder", "fake:32", "--store", store)[0] == 0
    code, printed, _ = run(capsys, "search", "Schriftgröße", "--collection", "t", "--store", store, "--json")
    hit = json.loads(printed)["hits"][0]
    pdf.unlink()  # drawn from the file kept at ingest, named by its title
    out = tmp_path / "stored.png"
    code, printed, err = run(capsys, "--store", store, "page", "Bericht.pdf", "--collection", "t", "--chunk",
                             str(hit["chunk_index"]), "--out", str(out))
    assert (code, err) == (0, ""), err
    assert amber_pixels(out) > 100
    (tmp_path / "documents" / f"{hit['document_id']}.pdf").unlink()
    code, _, err = run(capsys, "--store", store, "page", "Bericht.pdf", "--collection", "t", "--chunk", "0",
                       "--out", str(out))
    assert code == 1 and err.count("\n") == 1 and "until the document is re-ingested" in err
    code, _, err = run(capsys, "--store", store, "page", "Bericht.pdf", "--collection", "t", "--chunk", "500",
                       "--out", str(out))
    assert code == 1 and err.count("\n") == 1 and "chunk 500 is past the end" in err
