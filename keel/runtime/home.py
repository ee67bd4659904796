"""Where Keel keeps its files (KEEL_HOME), found with the standard library alone: the `keel`
command's entry point needs it before it imports anything of Keel's (keel/cli/entry.py)."""

from __future__ import annotations

from pathlib import Path


def home_folder(configured: str | None) -> Path:
    """``configured`` (KEEL_HOME), or the OS user's data folder for Keel."""
    if configured:
        return Path(configured).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir("keel")).resolve()
