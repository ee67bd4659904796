"""The embedding model as an ONNX graph for onnxruntime, made once from the local folder.

Embedding is most of what ingestion costs (all-MiniLM-L6-v2 through torch embeds ~26 chunks a
second on 2 cores) and part of every question. onnxruntime runs the same network faster: the
export here fuses BERT's attention, GELU and layer norms into onnxruntime's own kernels, and the
int8 file quantizes the weights of its matrix products per output channel (about 3x torch's
speed; the vectors keep cosine ~0.99 with torch's, and `bench/embedding.py` measures what that
does to retrieval). Made from the packaged files at set-up, or on first use, never downloaded:

    .venv/bin/python -c "from keel.models.embeddings import get_embeddings; get_embeddings()"

The files are named by a fingerprint of the source folder (its config, tokenizer and weights), so
another model, or new weights, gets its own export and never a stale one.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

FORMAT_VERSION = "1"  # bump when the export changes, so earlier files are made again
FP32_NAME, INT8_NAME = "model.onnx", "model-int8.onnx"
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17


def source_fingerprint(model_dir: Path) -> str:
    """Short hash of what the export depends on: the configuration and tokenizer files' contents,
    and the weights' sizes and modification times (hashing 90 MB at every start would cost more
    than the export saves)."""
    digest = hashlib.sha256(FORMAT_VERSION.encode())
    for name in ("config.json", "tokenizer.json", "sentence_bert_config.json", "1_Pooling/config.json"):
        path = model_dir / name
        digest.update(name.encode() + (path.read_bytes() if path.is_file() else b"-"))
    for weights in sorted(model_dir.glob("*.safetensors")) + sorted(model_dir.glob("*.bin")):
        stat = weights.stat()
        digest.update(f"{weights.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def export_dir(model_dir: Path, models_home: Path) -> Path:
    """Where the ONNX export of ``model_dir`` lives: named by the model's files, so a changed model
    is exported again."""
    return models_home / "embeddings" / f"{model_dir.name}-{source_fingerprint(model_dir)}"


def ensure_exported(model_dir: Path, models_home: Path, quantized: bool) -> Path:
    """The ONNX file of ``model_dir`` (int8 when ``quantized``), exported now if it is not there yet.
    One process exports at a time (a file lock); the others wait and use its files."""
    target_dir = export_dir(model_dir, models_home)
    target = target_dir / (INT8_NAME if quantized else FP32_NAME)
    if target.is_file():
        return target
    target_dir.mkdir(parents=True, exist_ok=True)
    with open(target_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_file():
            log.info("exporting the embedding model %s to ONNX (once; a few seconds)", model_dir.name)
            with _quiet():
                _export(model_dir, target_dir, quantized)
    return target


@contextmanager
def _quiet():
    """The exporters' advice (TorchScript deprecation, tracer and quantization pre-processing
    hints, said through warnings and the root logger, and a progress bar) is for their authors, not Keel's users."""
    from transformers.utils import logging as hf_logging

    root, bars = logging.getLogger(), hf_logging.is_progress_bar_enabled()
    level = root.level
    root.setLevel(logging.ERROR)
    hf_logging.disable_progress_bar()  # transformers' "Loading weights" bar
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)
        if bars:
            hf_logging.enable_progress_bar()


def _export(model_dir: Path, target_dir: Path, quantized: bool) -> None:
    fp32 = target_dir / FP32_NAME
    if not fp32.is_file():
        with tempfile.TemporaryDirectory(dir=target_dir) as scratch:
            raw = Path(scratch) / "raw.onnx"
            _torch_export(model_dir, raw)
            fused = Path(scratch) / FP32_NAME
            _fuse(model_dir, raw, fused)
            os.replace(fused, fp32)  # whole files only: a reader never sees half an export
    if quantized:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        with tempfile.TemporaryDirectory(dir=target_dir) as scratch:
            int8 = Path(scratch) / INT8_NAME
            # per output channel: per-tensor int8 moves MiniLM's vectors to cosine ~0.86 of torch's
            quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True,
                             extra_options={"DefaultTensorType": 1})  # 1 = FLOAT, for the fused ops' outputs
            os.replace(int8, target_dir / INT8_NAME)


def _torch_export(model_dir: Path, out: Path) -> None:
    import torch
    from transformers import AutoModel

    # eager attention: its pattern is what onnxruntime's optimizer fuses into one Attention kernel
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    example = tuple(torch.ones(2, 8, dtype=torch.long) for _ in INPUT_NAMES)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUT_NAMES, "last_hidden_state")}
    with torch.no_grad():
        torch.onnx.export(LastHiddenState(model), example, str(out), input_names=list(INPUT_NAMES),
                          output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=OPSET, dynamo=False)


def _fuse(model_dir: Path, raw: Path, out: Path) -> None:
    """onnxruntime's BERT fusions for a BERT model (all-MiniLM-L6-v2 is one); others are kept as exported."""
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "bert":
        os.replace(raw, out)
        return
    from onnxruntime.transformers import optimizer

    fused = optimizer.optimize_model(str(raw), model_type="bert", num_heads=int(config["num_attention_heads"]),
                                     hidden_size=int(config["hidden_size"]))
    fused.save_model_to_file(str(out))
