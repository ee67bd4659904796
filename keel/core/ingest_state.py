"""State schemas of the ingestion graph (graph/ingest_graph.py): documents sent with a run, and the
ingest report it returns, the same report ``keel ingest --json`` and ``POST /ingest`` give."""

from __future__ import annotations

from typing_extensions import (  # noqa: UP035 - pydantic builds the JSON schema from these (Python < 3.12)
    NotRequired,
    TypedDict,
)


class UploadedFile(TypedDict):
    """One document sent with the run: its name and its content, never a path on the server.

    The content is ``data_base64`` (the file's bytes, base64; a ``data:`` URL prefix is accepted)
    or ``text`` (a text or Markdown file's contents); the name's extension, else ``mime_type``,
    picks the loader. ``password`` opens an encrypted PDF."""

    filename: str
    data_base64: NotRequired[str]
    text: NotRequired[str]
    mime_type: NotRequired[str]
    password: NotRequired[str]


class IngestInput(TypedDict):
    """What a run sends: the files, and optionally the conversation they belong to. The owner is the
    run's ``user_id`` (its config or context; on LangGraph Studio the API key's user); a
    ``user_id`` given here must be that same user."""

    files: list[UploadedFile]
    user_id: NotRequired[str]
    conversation_id: NotRequired[str]


class FileError(TypedDict):
    """A file that was not stored, by name, and why."""

    source: str
    error: str


class FileWarning(TypedDict):
    """What a stored file lost (a page that could not be read, pictures OCR could not read or read
    with low confidence), by name."""

    source: str
    warning: str


class IngestOutput(TypedDict):
    """The ingest report: what was stored (documents, their parent and child chunks, their ids),
    how long it took, every file that was not stored with the reason, and what a stored file lost."""

    documents: int
    parents: int
    children: int
    seconds: float
    errors: list[FileError]
    doc_ids: list[str]
    warnings: list[FileWarning]


class IngestState(IngestInput, IngestOutput):
    """The ingestion graph's whole state: the run's input, then its report."""
