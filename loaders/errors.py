"""Errors that name the file and the reason, so a user knows which upload to fix and how."""

from __future__ import annotations

from pathlib import Path


class DocumentLoadError(ValueError):
    """A document could not be read. ``source`` is the file name, ``reason`` says why."""

    def __init__(self, source: str | Path, reason: str):
        self.source = Path(source).name if isinstance(source, Path) else str(source)
        self.reason = reason
        super().__init__(f"{self.source}: {reason}")


class UnsupportedDocumentError(DocumentLoadError):
    """Rejected before loading: unknown or legacy format, too large, too many pages, corrupt."""


class PasswordRequiredError(UnsupportedDocumentError):
    """An encrypted PDF without a password (or with a wrong one)."""
