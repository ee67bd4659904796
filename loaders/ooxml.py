"""Checks shared by the Office Open XML formats (.docx, .pptx are ZIP packages), made before a
parser unpacks anything: a legacy binary file under a new name, a damaged package, a zip bomb."""

from __future__ import annotations

import zipfile

from keel.core.settings.ingestion import IngestionSettings
from keel.loaders.base import KeelLoader
from keel.loaders.errors import UnsupportedDocumentError

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Word/PowerPoint 97-2003 (and encrypted Office files)
ZIP_MAGIC = b"PK"


def check_package(loader: KeelLoader, kind: str, main_part: str, cfg: IngestionSettings) -> None:
    """Raise ``UnsupportedDocumentError`` naming the file unless it is a sane ``kind`` package
    holding ``main_part`` (e.g. "word/document.xml")."""
    with loader.blob.as_bytes_io() as stream:
        head = stream.read(len(OLE_MAGIC))
        if head.startswith(OLE_MAGIC):
            raise UnsupportedDocumentError(
                loader.name,
                f"legacy or encrypted {kind} file (OLE2 container, not a ZIP package); "
                "save it as a current Office file or PDF, without a password",
            )
        if not head.startswith(ZIP_MAGIC):
            raise UnsupportedDocumentError(loader.name, f"corrupt {kind} file: not a ZIP package")
        stream.seek(0)
        try:
            with zipfile.ZipFile(stream) as package:
                members = package.infolist()
                names = {member.filename for member in members}
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
            raise UnsupportedDocumentError(loader.name, f"corrupt or truncated {kind} file: {exc}") from exc
    if len(members) > cfg.max_zip_members:
        raise UnsupportedDocumentError(loader.name, f"zip bomb: {len(members)} parts (limit {cfg.max_zip_members})")
    unpacked = sum(member.file_size for member in members)
    if unpacked > cfg.max_unpacked_bytes:
        raise UnsupportedDocumentError(
            loader.name, f"zip bomb: unpacks to {unpacked} bytes (limit {cfg.max_unpacked_bytes})"
        )
    for member in members:
        if member.file_size >= cfg.zip_ratio_check_min_bytes:
            ratio = member.file_size / max(1, member.compress_size)
            if ratio > cfg.max_compression_ratio:
                raise UnsupportedDocumentError(
                    loader.name,
                    f"zip bomb: part {member.filename} unpacks {ratio:.0f}x its size "
                    f"(limit {cfg.max_compression_ratio:g}x)",
                )
    if main_part not in names:
        raise UnsupportedDocumentError(loader.name, f"corrupt {kind} file: the package has no {main_part}")
