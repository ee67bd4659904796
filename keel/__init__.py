"""Keel: grounded, cited answers from your documents with small language models.

The design card's folders (graph/, nodes/, chains/, retrievers/, loaders/) live at the top of the
repository and are installed as ``keel.graph``, ``keel.nodes``... (see pyproject.toml); the rest of
Keel lives in this folder. Everything is imported as ``keel.<package>``, so nothing collides with
the packages of the application Keel is embedded in.
"""

import logging
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from keel.core.configuration import Configuration
    from keel.graph import build_graph, build_ingestion_graph

# What an application imports. Loaded on first use: ``import keel`` alone starts no model, server
# or LangGraph import.
__all__ = ["build_graph", "build_ingestion_graph", "Configuration"]
_HOMES = {"build_graph": "keel.graph", "build_ingestion_graph": "keel.graph",
          "Configuration": "keel.core.configuration"}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'keel' has no attribute {name!r}")

# A library leaves logging to its application: without this, Python's last-resort handler would
# print Keel's warnings on the stderr of every program that embeds it. The `keel` command and
# `keel serve` configure logging themselves (keel/cli/logs.py).
logging.getLogger(__name__).addHandler(logging.NullHandler())
