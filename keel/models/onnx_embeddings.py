"""A sentence-transformers folder's embeddings computed by onnxruntime, without torch.

The same vectors as HuggingFaceEmbeddings over the folder (its tokenizer, truncation, pooling, L2
normalisation): the fp32 export equals torch's to float precision, the int8 one is close (cosine
~0.99) and about 3x faster than torch on a CPU. Importing this module and embedding with it loads
neither torch nor transformers, which is most of what a short-lived process spends starting up.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings


class OnnxEmbeddings(Embeddings):
    """Embeddings of one exported model: ``onnx_file`` (keel/models/onnx_export.py) run over the
    texts tokenized with ``model_dir``'s own fast tokenizer, pooled as ``model_dir`` says; ``batch_size``
    texts per forward pass (sentence-transformers' default)."""

    def __init__(self, model_dir: str | Path, onnx_file: str | Path, *, batch_size: int = 32, threads: int = 0,
                 spin: bool = False):
        import onnxruntime
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        self.model_dir, self.onnx_file, self.batch_size = model_dir, Path(onnx_file), batch_size
        self.max_tokens = _max_seq_length(model_dir)
        self.pooling = _pooling(model_dir)
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.no_padding()  # each batch is padded to its own longest text below
        self._tokenizer.enable_truncation(max_length=self.max_tokens)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads  # 0: onnxruntime's default, one per physical core
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle threads sleep rather than spin: the cores are shared with ingest workers reading
        # files and with other requests, and spinning took their CPU (ingestion 13.1 s vs 14.6 s).
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        self._session = onnxruntime.InferenceSession(str(self.onnx_file), options,
                                                     providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch([str(t) for t in texts])
        # Texts of like length batched together: padding costs as much as text.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batches = [self._embed([encodings[i] for i in order[start:start + self.batch_size]])
                   for start in range(0, len(order), self.batch_size)]
        return np.concatenate(batches)[np.argsort(order)].tolist()  # back in the caller's order

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    def _embed(self, encodings) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = encoding.ids, 1, encoding.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _max_seq_length(model_dir: Path) -> int:
    """The folder's truncation length, as sentence-transformers reads it."""
    config = model_dir / "sentence_bert_config.json"
    if config.is_file():
        value = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
        if value:
            return int(value)
    model_config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    return int(model_config.get("max_position_embeddings", 512))


def _pooling(model_dir: Path) -> str:
    """"mean" or "cls", from the folder's pooling module (sentence-transformers' default: mean)."""
    config = model_dir / "1_Pooling" / "config.json"
    if not config.is_file():
        return "mean"
    modes = json.loads(config.read_text(encoding="utf-8"))
    if modes.get("pooling_mode_cls_token"):
        return "cls"
    if modes.get("pooling_mode_mean_tokens", True):
        return "mean"
    raise ValueError(f"{model_dir}: only mean or CLS pooling runs on onnxruntime; set KEEL_EMBEDDING_RUNTIME=torch")
