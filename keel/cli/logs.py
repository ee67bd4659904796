"""How the ``keel`` command logs: Keel's records on stderr at a level that means something, the
libraries underneath kept quiet, and no record drawn into a streaming answer.

The library itself configures nothing (keel/__init__.py gives the "keel" logger a NullHandler);
only the command's entry point calls ``configure_logging``. What the levels mean in Keel:
ERROR a failure a person must act on, WARNING degraded service (a server down, a fallback taken),
INFO lifecycle (a model file converted once, a request cancelled), DEBUG the mechanics of one
answer (a parser layer falling back, a retry of the answer loop, a continuation).

    keel ...       WARNING and up, Keel's and the libraries' (those below only from ERROR up)
    keel -v ...    Keel's DEBUG records too; the libraries below stay at WARNING
    keel -vv ...   every logger at DEBUG, the libraries' included
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from typing import TextIO

from keel.cli.live import active_region

# Libraries whose DEBUG and INFO records would drown Keel's own under `keel -v` (pymongo alone
# writes several per query); they show WARNING and up there, and everything only under -vv.
THIRD_PARTY_LOGGERS = (
    "pymongo", "redis", "redisvl", "urllib3", "httpx", "httpcore", "openai", "huggingface_hub", "filelock", "fsspec",
    "sentence_transformers", "transformers", "torch", "asyncio", "multipart", "python_multipart", "PIL",
    "matplotlib", "pypdf", "langsmith", "sse_starlette", "markdown_it",
)
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# transformers sets its own logger's level when first imported, from this variable
_TRANSFORMERS_VERBOSITY = {0: "error", 1: "warning"}


class ConsoleLogHandler(logging.StreamHandler):
    """Writes records to stderr; while ``keel chat`` draws a streaming answer, the draft is
    erased first and drawn again under the record (keel/cli/live.py). Without a ``stream`` it
    writes to whatever ``sys.stderr`` is when the record comes (a redirection, a test's capture)."""

    def __init__(self, stream: TextIO | None = None):
        super().__init__(stream)
        self._fixed_stream = stream

    @property
    def stream(self) -> TextIO:
        return self._fixed_stream or sys.stderr

    @stream.setter
    def stream(self, value: TextIO | None) -> None:
        self._fixed_stream = value

    def emit(self, record: logging.LogRecord) -> None:
        region = active_region()
        if region is None:
            super().emit(record)
            return
        with region.paused():
            super().emit(record)


def configure_logging(verbosity: int, stream: TextIO | None = None) -> ConsoleLogHandler:
    """Set up logging for one run of the command (``verbosity``: how many -v were given). A
    second call replaces the first one's handler instead of adding another."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, ConsoleLogHandler)]:
        root.removeHandler(handler)
    handler = ConsoleLogHandler(stream)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbosity >= 2 else logging.WARNING)
    logging.getLogger("keel").setLevel(logging.DEBUG if verbosity >= 1 else logging.NOTSET)
    library_level = {0: logging.ERROR, 1: logging.WARNING}.get(verbosity, logging.NOTSET)
    for name in THIRD_PARTY_LOGGERS:
        logging.getLogger(name).setLevel(library_level)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", _TRANSFORMERS_VERBOSITY.get(verbosity, "debug"))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if verbosity == 0:
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers reads it too
        warnings.filterwarnings("ignore")
    return handler
