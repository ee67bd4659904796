"""Legacy Office 97-2003 files, still common in company archives: Word (.doc), Excel (.xls) and
PowerPoint (.ppt).

.doc and .xls go through Debian's catdoc package (``catdoc`` and ``xls2csv``, under 1 MB, installed
by scripts/setup.sh), a real converter for both formats; LibreOffice headless would read them too
but is a few hundred MB for three formats. When catdoc is not installed the file is refused with a
reason that says what to install, never skipped in silence.

.ppt is read here (loaders/ppt_records.py) with olefile: catdoc's ``catppt`` reads only the slide
text list that older PowerPoint versions fill, and gives nothing for files whose text sits in the
slides' drawings, as current PowerPoint and converters write them.
"""

from __future__ import annotations

import csv
import io
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from langchain_core.documents import Document

from keel.loaders.base import KeelLoader
from keel.loaders.errors import DocumentLoadError, UnsupportedDocumentError
from keel.loaders.ooxml import OLE_MAGIC
from keel.loaders.ppt_records import PptFormatError, read_slides
from keel.loaders.tables import TableText

DOC_EXTENSIONS = (".doc",)
XLS_EXTENSIONS = (".xls",)
PPT_EXTENSIONS = (".ppt",)
CATDOC_HINT = "install Debian's catdoc package (scripts/setup.sh does), or save the file as a current Office file or PDF"
_PAGE_BREAK = "\f"


class ConverterLoader(KeelLoader):
    """A legacy file read by a command-line converter that writes UTF-8 text."""

    kind = ""
    program = ""
    _text: str | None = None

    def command(self, path: str) -> list[str]:
        raise NotImplementedError

    def open(self) -> str:
        """Run the converter (once); its text, or a clear reason why the file cannot be read."""
        if self._text is None:
            self._text = self._convert()
        return self._text

    def _convert(self) -> str:
        with self.blob.as_bytes_io() as stream:
            if stream.read(len(OLE_MAGIC)) != OLE_MAGIC:  # the converters would print any bytes as text
                raise UnsupportedDocumentError(self.name, f"corrupt legacy {self.kind} file: not an OLE2 file")
        binary = shutil.which(self.program)
        if binary is None:
            raise UnsupportedDocumentError(
                self.name, f"legacy {self.kind} file: reading it needs {self.program}, which is not installed "
                f"({CATDOC_HINT})"
            )
        with self._on_disk() as path:
            try:
                done = subprocess.run(
                    [binary, *self.command(path)], capture_output=True, check=False,
                    timeout=self.cfg.legacy_converter_seconds,
                )
            except subprocess.TimeoutExpired as exc:
                raise UnsupportedDocumentError(
                    self.name, f"legacy {self.kind} file: {self.program} gave no result in "
                    f"{self.cfg.legacy_converter_seconds:g} s (legacy_converter_seconds)"
                ) from exc
        message = done.stderr.decode("utf-8", "replace").strip()
        if done.returncode != 0 or (message and not done.stdout.strip()):
            raise UnsupportedDocumentError(
                self.name, f"corrupt or encrypted legacy {self.kind} file: {self.program} failed "
                f"(exit {done.returncode}){': ' + _first_sentence(message) if message else ''}"
            )
        return done.stdout.decode("utf-8", "replace")

    @contextmanager
    def _on_disk(self) -> Iterator[str]:
        """The file's path; an upload is written to a private temporary file first."""
        if self.path is not None:
            yield str(self.path.resolve())  # absolute: a name starting with "-" is never an option
            return
        with tempfile.TemporaryDirectory(prefix="keel-legacy-") as folder:
            target = Path(folder) / f"upload{Path(self.name).suffix.lower()}"
            target.write_bytes(self.read_bytes())
            yield str(target)


class DocLoader(ConverterLoader):
    """A Word 97-2003 file (.doc) through catdoc; its page breaks (when catdoc sees them) are pages."""

    kind = "Word 97-2003 (.doc)"
    program = "catdoc"

    def command(self, path: str) -> list[str]:
        return ["-d", "utf-8", "-w", path]  # UTF-8 out, paragraphs unwrapped

    def lazy_load(self) -> Iterator[Document]:
        pages = self.open().split(_PAGE_BREAK)
        if len(pages) > self.cfg.max_pages:
            raise UnsupportedDocumentError(self.name, f"too many pages: {len(pages)} (limit {self.cfg.max_pages})")
        for number, text in enumerate(pages, start=1):
            yield Document(page_content=text.strip(), metadata=self.metadata(number, len(pages)))


class XlsLoader(ConverterLoader):
    """An Excel 97-2003 workbook (.xls) through xls2csv: one page per sheet with data (``Sheet:
    <name>`` first, the names read from the workbook's records, when they line up with the sheets
    xls2csv printed), rows as ``column: value`` lines (loaders/tables.py)."""

    kind = "Excel 97-2003 (.xls)"
    program = "xls2csv"

    def command(self, path: str) -> list[str]:
        return ["-d", "utf-8", "-c", ",", "-q", "2", path]  # quote every text cell

    def lazy_load(self) -> Iterator[Document]:
        sheets = self.open().split(_PAGE_BREAK)
        if len(sheets) > 1 and not sheets[-1].strip():
            sheets.pop()  # xls2csv ends every sheet, the last one too, with a page break
        if len(sheets) > self.cfg.max_pages:
            raise UnsupportedDocumentError(self.name, f"too many sheets: {len(sheets)} (limit {self.cfg.max_pages})")
        table = TableText(self)
        names = sheet_names(self.read_bytes())
        if len(names) != len(sheets):  # unreadable records, or empty sheets xls2csv left out
            names = []
        for number, sheet in enumerate(sheets, start=1):
            try:
                lines = table.lines(csv.reader(io.StringIO(sheet)))
            except csv.Error as exc:
                raise DocumentLoadError(self.name, f"sheet {number} cannot be read: {exc}") from exc
            title = [f"Sheet: {names[number - 1]}"] if names else []
            content = "\n".join([*title, *lines]) if lines else ""
            yield Document(page_content=content, metadata=self.metadata(number, len(sheets), table=True))


class PptLoader(KeelLoader):
    """A PowerPoint 97-2003 file (.ppt): one page per slide, its text in the order it was written,
    speaker notes after it; master-slide placeholders ("Click to edit ...") left out."""

    _slides: list | None = None

    def open(self) -> list:
        """The slides (read once), or a clear reason why the file cannot be read."""
        if self._slides is None:
            try:
                slides = read_slides(self.read_bytes())
            except PptFormatError as exc:
                raise UnsupportedDocumentError(
                    self.name, f"corrupt or encrypted legacy PowerPoint 97-2003 (.ppt) file: {exc}"
                ) from exc
            if len(slides) > self.cfg.max_pages:
                raise UnsupportedDocumentError(self.name, f"too many slides: {len(slides)} (limit {self.cfg.max_pages})")
            self._slides = slides
        return self._slides

    def lazy_load(self) -> Iterator[Document]:
        slides = self.open()
        for number, slide in enumerate(slides, start=1):
            lines = list(slide.lines)
            if slide.notes:
                lines.append(f"Speaker notes: {' '.join(slide.notes)}")
            yield Document(page_content="\n".join(lines), metadata=self.metadata(number, len(slides)))


_BOUND_SHEET, _GLOBALS_END = 0x0085, 0x000A


def sheet_names(raw: bytes) -> list[str]:
    """The sheet names of an Excel 97-2003 workbook, in order (its BOUNDSHEET records); [] when the
    workbook cannot be read this way (xls2csv does not print them)."""
    import olefile

    try:
        with olefile.OleFileIO(io.BytesIO(raw)) as ole:
            stream = next((name for name in ("Workbook", "Book") if ole.exists(name)), None)
            data = ole.openstream(stream).read() if stream else b""
    except (OSError, ValueError):
        return []
    names, offset = [], 0
    while offset + 4 <= len(data):
        kind, length = struct.unpack_from("<HH", data, offset)
        body = data[offset + 4 : offset + 4 + length]
        if kind == _BOUND_SHEET and len(body) >= 8:
            count, wide = body[6], body[7] & 1
            raw_name = body[8 : 8 + count * (2 if wide else 1)]
            names.append(raw_name.decode("utf-16-le" if wide else "latin-1", errors="replace"))
        elif kind == _GLOBALS_END:
            break
        offset += 4 + length
    return names


def _first_sentence(message: str) -> str:
    """The converter's own reason, without its advice on command-line switches."""
    return message.splitlines()[-1].split(". Try ")[0]
