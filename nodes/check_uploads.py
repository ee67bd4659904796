"""The ingestion graph's first step: check what a run sent before any file is decoded or stored.

A run is a caller of the server (LangGraph Studio, ``langgraph dev``), so it gets what ``/ingest``
allows and no more: file contents sent with the run, never a path the server would read; documents
filed under the run's own user (on Studio, the API key's); ids checked as ``/ingest`` checks them;
and at most ``max_file_bytes`` of documents in one run, what one ``/ingest`` upload may carry. A
mistake in the run is an ``UploadRefused`` naming it.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.runnables import RunnableConfig

from keel.core.configuration import Configuration
from keel.core.ingest_state import IngestState
from keel.stores.tag_filters import validate_tag_id

FILE_KEYS = frozenset({"filename", "data_base64", "text", "mime_type", "password"})
CONTENT_KEYS = ("data_base64", "text")
_WHITESPACE = re.compile(r"\s+")


class UploadRefused(ValueError):
    """The run sent something the ingestion graph does not take; the message says what and why."""


def check_uploads(state: IngestState, config: RunnableConfig) -> dict:
    """Refuse a run whose files or ids ``/ingest`` would refuse, before any file is decoded."""
    cfg = Configuration.from_runnable_config(config)
    owner(state, cfg)
    conversation(state, cfg)
    files = state.get("files")
    if not isinstance(files, list) or not files:
        raise UploadRefused("send the documents as files: a non-empty list of {filename, data_base64 or text}")
    total = 0
    for number, upload in enumerate(files, start=1):
        size = _checked_file(number, upload)
        if size > cfg.max_file_bytes:
            raise UploadRefused(f"file '{upload['filename']}' is too large: about {size} bytes "
                                f"(limit max_file_bytes = {cfg.max_file_bytes})")
        total += size
    if total > cfg.max_file_bytes:
        raise UploadRefused(f"the {len(files)} files of this run add up to about {total} bytes; one run carries at "
                            f"most max_file_bytes = {cfg.max_file_bytes}, as one /ingest upload does: send them in "
                            "several runs")
    return {}


def owner(state: IngestState, cfg: Configuration) -> str:
    """The run's user; a ``user_id`` in the input must be the same (Studio sets the run's from the key)."""
    user_id = _checked_id("user_id", cfg.user_id, cfg)
    named = state.get("user_id")
    if named is not None and named != user_id:
        raise UploadRefused(f"user_id {named!r} is not this run's user {user_id!r}: documents are filed under the "
                            "run's own user (config or context user_id)")
    return user_id


def conversation(state: IngestState, cfg: Configuration) -> str | None:
    """The upload's conversation id, checked (None: the documents belong to the user, not a conversation)."""
    value = state.get("conversation_id")
    return None if value is None else _checked_id("conversation_id", value, cfg)


def _checked_id(name: str, value: Any, cfg: Configuration) -> str:
    if isinstance(value, str) and len(value) > cfg.max_request_id_chars:
        raise UploadRefused(f"{name} must be an id of at most {cfg.max_request_id_chars} characters")
    try:
        return validate_tag_id(name, value)
    except ValueError as exc:
        raise UploadRefused(str(exc)) from None


def _checked_file(number: int, upload: Any) -> int:
    """Check one file's fields; its size in bytes (estimated from the base64, which is not decoded)."""
    if not isinstance(upload, dict):
        raise UploadRefused(f"file {number} must be an object {{filename, data_base64 or text, mime_type?}}")
    unknown = sorted(set(upload) - FILE_KEYS)
    if unknown:
        raise UploadRefused(f"file {number}: '{unknown[0]}' cannot be sent; the ingestion graph never reads a path, "
                            "URL or anything else on the server: send the file's content as data_base64 or text")
    filename = upload.get("filename")
    if not isinstance(filename, str) or not filename.strip():
        raise UploadRefused(f"file {number} needs a filename (its extension picks the loader)")
    if "/" in filename or "\\" in filename or filename in (".", "..") or "\x00" in filename:
        raise UploadRefused(f"file {number}: filename {filename!r} must be a file's name, not a path; the ingestion "
                            "graph never reads the server's disk: send the file's content as data_base64 or text")
    contents = [key for key in CONTENT_KEYS if upload.get(key) is not None]
    if len(contents) != 1:
        raise UploadRefused(f"file '{filename}' needs exactly one of data_base64 (its bytes, base64) or text")
    content = upload[contents[0]]
    if not isinstance(content, str):
        raise UploadRefused(f"file '{filename}': {contents[0]} must be a string")
    for key in ("mime_type", "password"):
        if upload.get(key) is not None and not isinstance(upload[key], str):
            raise UploadRefused(f"file '{filename}': {key} must be a string")
    if contents[0] == "text":
        return len(content.encode("utf-8"))
    if content.startswith("data:") and "," in content:
        content = content.split(",", 1)[1]
    return len(_WHITESPACE.sub("", content)) * 3 // 4
