"""Tables as documents: .csv files, Excel workbooks (.xlsx; legacy .xls in loaders/legacy.py).

A table is written as text a reader and a retriever can use on its own: each row is one line of
``column: value`` pairs, ``Name: Ada Lovelace | Team: Billing | Phone: 4021``. Every chunk of a long
table then still says what each value is (a header stated once at the top would be in the first
chunk only, and a question about row 400 would find numbers without meaning). Empty cells are left
out. The first row with any value is the header; a header cell left empty is called "column N".

A sheet of a workbook is a page (``Sheet: <name>`` first); a .csv file is page 1 of 1.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable, Iterator
from typing import Any

from langchain_core.documents import Document

from keel.loaders.base import KeelLoader
from keel.loaders.errors import DocumentLoadError, UnsupportedDocumentError
from keel.loaders.ooxml import check_package

CSV_EXTENSIONS = (".csv", ".tsv")
XLSX_EXTENSIONS = (".xlsx", ".xlsm")
_SNIFF_CHARS = 64 * 1024
_DELIMITERS = ",;\t|"
# Between a row's cells, as Word and PowerPoint table rows are written (loaders/docx.py, pptx.py):
# the answer checks read a capitalised word after "| " as a column name, never a person's name.
CELL_SEPARATOR = " | "


def cell_text(value: Any) -> str:
    """A cell as a person reads it: whole numbers without ".0", dates in ISO form."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="minutes") if (value.hour or value.minute) else value.date().isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return " ".join(str(value).split())


class TableText:
    """Turns rows (lists of cells) into ``column: value`` lines, counting rows against a limit."""

    def __init__(self, loader: KeelLoader):
        self.loader = loader
        self.rows = 0

    def lines(self, rows: Iterable[Iterable[Any]]) -> list[str]:
        header: list[str] | None = None
        out = []
        for raw in rows:
            cells = [cell_text(value) for value in raw]
            if not any(cells):
                continue
            self.rows += 1
            if self.rows > self.loader.cfg.max_table_rows:
                raise UnsupportedDocumentError(
                    self.loader.name, f"too many table rows: more than {self.loader.cfg.max_table_rows} (max_table_rows)"
                )
            if header is None:
                header = [cell or f"column {index}" for index, cell in enumerate(cells, start=1)]
                continue
            if len(cells) > len(header):
                header += [f"column {index}" for index in range(len(header) + 1, len(cells) + 1)]
            out.append(CELL_SEPARATOR.join(f"{name}: {cell}" for name, cell in zip(header, cells) if cell))
        if header is not None and not out:  # a header alone: still the table's words
            out.append(CELL_SEPARATOR.join(header))
        return out


def decode_text(loader: KeelLoader, data: bytes) -> str:
    """UTF-8 (with or without BOM), else Windows-1252 (what Excel writes on Windows), reported."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("cp1252", errors="replace")
        loader.warn("not UTF-8: read as Windows-1252 (characters may differ)")
    if "\x00" in text:
        raise DocumentLoadError(loader.name, "not text: it contains NUL bytes (a binary file?)")
    return text


class CsvLoader(KeelLoader):
    """A .csv / .tsv file as one page of ``column: value`` lines; the delimiter is detected."""

    def lazy_load(self) -> Iterator[Document]:
        text = decode_text(self, self.read_bytes())
        try:
            dialect: Any = csv.Sniffer().sniff(text[:_SNIFF_CHARS], delimiters=_DELIMITERS)
        except csv.Error:
            dialect = csv.excel_tab if self.name.lower().endswith(".tsv") else csv.excel
        try:
            lines = TableText(self).lines(csv.reader(io.StringIO(text), dialect))
        except csv.Error as exc:
            raise DocumentLoadError(self.name, f"malformed CSV: {exc}") from exc
        yield Document(page_content="\n".join(lines), metadata=self.metadata(1, 1, table=True))


class XlsxLoader(KeelLoader):
    """An Excel workbook: one page per sheet (hidden sheets too: their data is the user's)."""

    def open(self) -> Any:
        check_package(self, "Excel", "xl/workbook.xml", self.cfg)
        from openpyxl import load_workbook

        try:
            with self.blob.as_bytes_io() as stream:
                workbook = load_workbook(io.BytesIO(stream.read()), read_only=True, data_only=True)
        except Exception as exc:  # openpyxl raises KeyError, ValueError, lxml errors ...
            raise UnsupportedDocumentError(self.name, f"corrupt Excel file: {type(exc).__name__}: {exc}") from exc
        if len(workbook.sheetnames) > self.cfg.max_pages:
            raise UnsupportedDocumentError(
                self.name, f"too many sheets: {len(workbook.sheetnames)} (limit {self.cfg.max_pages})"
            )
        return workbook

    def lazy_load(self) -> Iterator[Document]:
        workbook = self.open()
        table = TableText(self)
        try:
            total = len(workbook.sheetnames)
            for number, sheet in enumerate(workbook.worksheets, start=1):
                try:
                    lines = table.lines(sheet.iter_rows(values_only=True))
                except DocumentLoadError:
                    raise
                except Exception as exc:
                    self.warn(f"sheet {sheet.title!r} cannot be read, its cells are lost: {type(exc).__name__}: {exc}")
                    continue
                content = "\n".join([f"Sheet: {sheet.title}", *lines]) if lines else ""
                yield Document(page_content=content, metadata=self.metadata(number, total, table=True))
        finally:
            workbook.close()
