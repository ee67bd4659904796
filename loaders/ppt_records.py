"""The text of a PowerPoint 97-2003 (.ppt) file, read from its records (the published [MS-PPT]
binary format) with olefile.

A .ppt keeps its records in the "PowerPoint Document" stream; saves append edits, so the current
version is found from the "Current User" stream: its last edit's persist directory maps object ids
to record offsets (newer edits first), the document record lists the slides in order, and each
slide record holds its text atoms, in its drawing's text boxes (current writers) or in the
document's slide text list (older ones). Notes pages name the slide they belong to.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

STREAM = "PowerPoint Document"
_HEADER = struct.Struct("<HHI")
_CONTAINER = 0xF
_DOCUMENT, _SLIDE, _NOTES, _SLIDE_LIST = 0x03E8, 0x03EE, 0x03F0, 0x0FF0
_SLIDE_PERSIST, _NOTES_ATOM, _USER_EDIT, _PERSIST_DIRECTORY = 0x03F3, 0x03F1, 0x0FF5, 0x1772
_TEXT_CHARS, _TEXT_BYTES = 0x0FA0, 0x0FA8
_LIST_SLIDES, _LIST_NOTES = 0, 2
_ENCRYPTED_TOKEN = 0xF3D1C4DF
_MAX_EDITS = 10_000  # a loop in a damaged edit chain ends here
_PLACEHOLDERS = {"*", ""}  # the slide-number placeholder's text, empty boxes


class PptFormatError(ValueError):
    """Not a readable PowerPoint 97-2003 file."""


@dataclass
class Slide:
    """The text lines and speaker notes of one slide of a legacy PowerPoint file."""
    slide_id: int = 0
    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _records(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(version, instance, type, body start, body end) of the records between start and end."""
    offset = start
    while offset + _HEADER.size <= end:
        version_instance, kind, length = _HEADER.unpack_from(data, offset)
        body = offset + _HEADER.size
        stop = min(body + length, end)
        yield version_instance & 0xF, version_instance >> 4, kind, body, stop
        offset = body + length


def _texts(data: bytes, start: int, end: int) -> Iterator[str]:
    """The text atoms under a container, depth first, in file order."""
    for version, _, kind, body, stop in _records(data, start, end):
        if version == _CONTAINER:
            yield from _texts(data, body, stop)
        elif kind == _TEXT_CHARS:
            yield data[body:stop].decode("utf-16-le", errors="replace")
        elif kind == _TEXT_BYTES:
            yield data[body:stop].decode("latin-1")


def _lines(texts: Iterator[str]) -> list[str]:
    out = []
    for text in texts:
        for line in text.replace("\x0b", "\r").split("\r"):
            line = " ".join(line.split())
            if line not in _PLACEHOLDERS:
                out.append(line)
    return out


def _record_at(data: bytes, offset: int, kind: int) -> tuple[int, int]:
    if offset + _HEADER.size > len(data):
        raise PptFormatError(f"record offset {offset} is past the end of the stream")
    _, found, length = _HEADER.unpack_from(data, offset)
    if found != kind:
        raise PptFormatError(f"expected record 0x{kind:04X} at offset {offset}, found 0x{found:04X}")
    return offset + _HEADER.size, min(offset + _HEADER.size + length, len(data))


def _persist_directory(data: bytes, current_edit: int) -> tuple[dict[int, int], int]:
    """Object id -> record offset for the current version, and the document's object id."""
    offsets: dict[int, int] = {}
    document_id = None
    edit, seen = current_edit, 0
    while edit and seen < _MAX_EDITS:
        seen += 1
        body, stop = _record_at(data, edit, _USER_EDIT)
        if stop - body < 20:
            raise PptFormatError("truncated edit record")
        last_edit, directory, doc_ref = struct.unpack_from("<III", data, body + 8)
        document_id = doc_ref if document_id is None else document_id
        dir_body, dir_stop = _record_at(data, directory, _PERSIST_DIRECTORY)
        position = dir_body
        while position + 4 <= dir_stop:
            (entry,) = struct.unpack_from("<I", data, position)
            first, count = entry & 0xFFFFF, entry >> 20
            position += 4
            for index in range(count):
                if position + 4 > dir_stop:
                    break
                offsets.setdefault(first + index, struct.unpack_from("<I", data, position)[0])  # newest wins
                position += 4
        edit = last_edit
    if document_id is None:
        raise PptFormatError("no edit record")
    return offsets, document_id


def _slides_from_directory(data: bytes, current_edit: int) -> list[Slide]:
    offsets, document_id = _persist_directory(data, current_edit)
    if document_id not in offsets:
        raise PptFormatError("the document record is missing")
    doc_body, doc_stop = _record_at(data, offsets[document_id], _DOCUMENT)
    slides: list[Slide] = []
    notes_refs: list[int] = []
    listed: dict[int, list[str]] = {}
    for version, instance, kind, body, stop in _records(data, doc_body, doc_stop):
        if kind != _SLIDE_LIST or version != _CONTAINER or instance not in (_LIST_SLIDES, _LIST_NOTES):
            continue
        for _, _, atom, atom_body, atom_stop in _records(data, body, stop):
            if atom == _SLIDE_PERSIST and atom_stop - atom_body >= 16:
                persist_ref, _, _, slide_id = struct.unpack_from("<IIiI", data, atom_body)
                if instance == _LIST_NOTES:
                    notes_refs.append(persist_ref)
                else:
                    slides.append(Slide(slide_id=slide_id, lines=_slide_lines(data, offsets.get(persist_ref))))
                    listed[slide_id] = []
            elif atom in (_TEXT_CHARS, _TEXT_BYTES) and instance == _LIST_SLIDES and slides:
                encoding = "utf-16-le" if atom == _TEXT_CHARS else "latin-1"
                listed[slides[-1].slide_id].append(data[atom_body:atom_stop].decode(encoding, errors="replace"))
    for slide in slides:
        if not slide.lines:  # older writers keep the text in the document's slide list
            slide.lines = _lines(iter(listed.get(slide.slide_id, [])))
    by_id = {slide.slide_id: slide for slide in slides}
    for ref in notes_refs:
        if ref in offsets:
            slide_id, lines = _notes(data, offsets[ref])
            if slide_id in by_id:
                by_id[slide_id].notes.extend(lines)
    return slides


def _slide_lines(data: bytes, offset: int | None) -> list[str]:
    if offset is None:
        return []
    try:
        body, stop = _record_at(data, offset, _SLIDE)
    except PptFormatError:
        return []
    return _lines(_texts(data, body, stop))


def _notes(data: bytes, offset: int) -> tuple[int, list[str]]:
    try:
        body, stop = _record_at(data, offset, _NOTES)
    except PptFormatError:
        return -1, []
    slide_id = -1
    for _, _, kind, atom_body, atom_stop in _records(data, body, stop):
        if kind == _NOTES_ATOM and atom_stop - atom_body >= 4:
            (slide_id,) = struct.unpack_from("<I", data, atom_body)
    return slide_id, _lines(_texts(data, body, stop))


def _slides_in_file_order(data: bytes) -> list[Slide]:
    """Every slide record of the stream, in file order: the fallback when the edit chain is damaged
    (an older copy of an edited slide may then come twice)."""
    return [Slide(lines=_lines(_texts(data, body, stop)))
            for version, _, kind, body, stop in _records(data, 0, len(data))
            if kind == _SLIDE and version == _CONTAINER]


def read_slides(raw: bytes) -> list[Slide]:
    """The slides of a .ppt file with their text and notes, in presentation order."""
    import olefile

    try:
        ole = olefile.OleFileIO(io.BytesIO(raw))
    except (OSError, ValueError) as exc:
        raise PptFormatError(f"not an OLE2 file: {exc}") from exc
    with ole:
        if not ole.exists(STREAM):
            raise PptFormatError("no 'PowerPoint Document' stream")
        data = ole.openstream(STREAM).read()
        current = ole.openstream("Current User").read() if ole.exists("Current User") else b""
    if len(current) >= 20:
        token, current_edit = struct.unpack_from("<II", current, 12)
        if token == _ENCRYPTED_TOKEN:
            raise PptFormatError("the file is password-protected; save it without a password")
        try:
            slides = _slides_from_directory(data, current_edit)
            if slides:
                return slides
        except (PptFormatError, struct.error):
            pass
    slides = _slides_in_file_order(data)
    if not slides:
        raise PptFormatError("no slides found")
    return slides
