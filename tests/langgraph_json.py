"""LangGraph Studio's langgraph.json, read the way Studio reads it, so tests can check the objects it names."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def langgraph_spec() -> dict:
    return json.loads((PROJECT_ROOT / "langgraph.json").read_text())


def load_reference(reference: str):
    """The object a ``./path/module.py:attribute`` reference names; the files are installed under keel."""
    path, _, attribute = reference.partition(":")
    module_path = path.removeprefix("./keel/").removeprefix("./").removesuffix(".py").replace("/", ".")
    return getattr(importlib.import_module("keel." + module_path), attribute)
