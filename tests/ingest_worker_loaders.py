"""Loaders for the read-ahead worker tests, at module level so spawned workers can import them:
one logs, one fails with an unexpected exception, one kills the process reading it, one gives
documents whose metadata cannot be pickled back to the ingesting process."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

from langchain_core.documents import Document

from keel.loaders.text import PlainTextLoader

WORKER_LOG = "keel.tests.worker_loader"


class LoggingTextLoader(PlainTextLoader):
    def lazy_load(self) -> Iterator[Document]:
        logging.getLogger(WORKER_LOG).warning("read %s in process %d", self.name, os.getpid())
        yield from super().lazy_load()


class BrokenParserLoader(PlainTextLoader):
    def lazy_load(self) -> Iterator[Document]:
        raise RuntimeError(f"parser bug on {self.name}")


class ProcessKillingLoader(PlainTextLoader):
    def lazy_load(self) -> Iterator[Document]:
        os._exit(3)  # what the out-of-memory killer or a crash in a C parser looks like to the pool
        yield from ()


class UnpicklableMetadataLoader(PlainTextLoader):
    def lazy_load(self) -> Iterator[Document]:
        for document in super().lazy_load():
            document.metadata["reader"] = lambda: None  # a lambda: pickle refuses it
            yield document


def logging_factory(blob, *, password, user_id, conversation_id, cfg):
    return LoggingTextLoader(blob, user_id=user_id, conversation_id=conversation_id, cfg=cfg)


def broken_factory(blob, *, password, user_id, conversation_id, cfg):
    return BrokenParserLoader(blob, user_id=user_id, conversation_id=conversation_id, cfg=cfg)


def killing_factory(blob, *, password, user_id, conversation_id, cfg):
    return ProcessKillingLoader(blob, user_id=user_id, conversation_id=conversation_id, cfg=cfg)


def unpicklable_factory(blob, *, password, user_id, conversation_id, cfg):
    return UnpicklableMetadataLoader(blob, user_id=user_id, conversation_id=conversation_id, cfg=cfg)
