"""A tiny dependency-free PDF writer for tests and the sample set.

``make_pdf(path, pages, title=None)`` writes one real text page per string, in Helvetica
(WinAnsiEncoding), so pypdf extracts the text back. Long lines wrap; "\\n" starts a new line.
Characters outside Windows-1252 become "?". Text that does not fit on a page keeps going below
the bottom margin (still extracted); split long texts into several pages yourself.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

PAGE_WIDTH, PAGE_HEIGHT = 612, 792  # US Letter, points
MARGIN = 72
FONT_SIZE = 11
LEADING = 14
WRAP_CHARS = 85  # ~ (612 - 2*72) / (0.5 * 11): Helvetica's average glyph is about half an em


def _pdf_string(text: str) -> bytes:
    data = text.encode("cp1252", errors="replace")
    return b"(" + data.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _wrapped_lines(text: str) -> list[str]:
    lines: list[str] = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        lines.extend(textwrap.wrap(raw, WRAP_CHARS, break_long_words=True) or [""])
    return lines


def _content_stream(text: str) -> bytes:
    parts = [b"BT", f"/F1 {FONT_SIZE} Tf {LEADING} TL {MARGIN} {PAGE_HEIGHT - MARGIN} Td".encode()]
    for index, line in enumerate(_wrapped_lines(text)):
        if index:
            parts.append(b"T*")
        parts.append(_pdf_string(line) + b" Tj")
    parts.append(b"ET")
    return b"\n".join(parts)


def make_pdf(path: str | Path, pages: list[str], title: str | None = None) -> Path:
    """Write a PDF with one page per string in ``pages``; returns the path."""
    if not pages:
        raise ValueError("make_pdf needs at least one page")
    path = Path(path)
    objects: dict[int, bytes] = {}
    page_ids = [4 + 2 * index for index in range(len(pages))]
    kids = b" ".join(f"{page_id} 0 R".encode() for page_id in page_ids)
    objects[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[2] = b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(len(pages)).encode() + b" >>"
    objects[3] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    for page_id, text in zip(page_ids, pages):
        stream = _content_stream(text)
        objects[page_id] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_WIDTH} {PAGE_HEIGHT}] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {page_id + 1} 0 R >>"
        ).encode()
        objects[page_id + 1] = b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream"
    info_id = 4 + 2 * len(pages)
    objects[info_id] = b"<< /Producer (keel tests/pdf_factory.py)" + (
        b" /Title " + _pdf_string(title) if title else b""
    ) + b" >>"

    return write_pdf_objects(path, objects, trailer=f"/Root 1 0 R /Info {info_id} 0 R")


def write_pdf_objects(path: str | Path, objects: dict[int, bytes], trailer: str = "/Root 1 0 R") -> Path:
    """Write numbered PDF objects (1..n, each its dictionary or stream) with their cross-reference
    table and ``trailer`` entries; returns the path."""
    path = Path(path)
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n".encode() + objects[number] + b"\nendobj\n"
    xref_at = len(out)
    size = max(objects) + 1
    out += f"xref\n0 {size}\n0000000000 65535 f \n".encode()
    for number in range(1, size):
        out += f"{offsets[number]:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {size} {trailer} >>\nstartxref\n{xref_at}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path
