"""Tables as documents: .csv files, Excel workbooks (.xlsx; legacy .xls in loaders/legacy.py).

A table is written as text a reader and a retriever can use on its own: each row is one line of
``column: value`` pairs, ``Name: Ada Lovelace | Team: Billing | Phone: 4021``. Every chunk of a long
table then still says what each value is (a header stated once at the top would be in the first
chunk only, and a question about row 400 would find numbers without meaning). Empty cells are left
out. The first row with any value is the header; a header cell left empty is called "column N".

A sheet of a workbook is a page (``Sheet: <name>`` first); a .csv file is page 1 of 1. Markdown
pipe tables inside text files are written the same way (``pipe_tables_as_lines``): a spec table
whose columns are look-alike models then says on each line which value belongs to which model.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
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
            self.count_row()
            if header is None:
                header = [cell or f"column {index}" for index, cell in enumerate(cells, start=1)]
                continue
            if len(cells) > len(header):
                header += [f"column {index}" for index in range(len(header) + 1, len(cells) + 1)]
            out.append(CELL_SEPARATOR.join(f"{name}: {cell}" for name, cell in zip(header, cells, strict=False) if cell))
        if header is not None and not out:  # a header alone: still the table's words
            out.append(CELL_SEPARATOR.join(header))
        return out

    def unnamed_lines(self, rows: Iterable[Iterable[Any]]) -> list[str]:
        """Rows of a table without a header: a label and its value as ``label: value``, wider rows
        as their cells."""
        out = []
        for raw in rows:
            cells = [cell for cell in (cell_text(value) for value in raw) if cell]
            if not cells:
                continue
            self.count_row()
            out.append(f"{cells[0]}: {cells[1]}" if len(cells) == 2 else CELL_SEPARATOR.join(cells))
        return out

    def count_row(self) -> None:
        self.rows += 1
        if self.rows > self.loader.cfg.max_table_rows:
            raise UnsupportedDocumentError(
                self.loader.name, f"too many table rows: more than {self.loader.cfg.max_table_rows} (max_table_rows)"
            )


_DELIMITER_CELL = re.compile(r"\s*:?-+:?\s*")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
_FENCE = re.compile(r"^ {0,3}(?:```|~~~)")
_EMPHASIS = re.compile(r"^(\*\*?)([^*]+)\1$")


def pipe_cells(line: str) -> list[str]:
    """A Markdown table row's cells, without the outer pipes or ``**`` around a cell; an escaped
    pipe stays ``\\|``, so it is never read as a cell border."""
    inner = line.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|") and not inner.endswith("\\|"):
        inner = inner[:-1]
    cells = []
    for cell in _UNESCAPED_PIPE.split(inner):
        cell = cell.strip()
        emphasis = _EMPHASIS.match(cell)
        cells.append(emphasis.group(2).strip() if emphasis else cell)
    return cells


def _is_delimiter(line: str, columns: int) -> bool:
    """The line under a table's header: one cell of dashes (colons for alignment) per column."""
    if "|" not in line or "-" not in line:
        return False
    cells = pipe_cells(line)
    return len(cells) == columns and all(_DELIMITER_CELL.fullmatch(cell) for cell in cells)


def pipe_tables_as_lines(text: str, table: TableText) -> str:
    """The text with each Markdown pipe table (a header row, a ``---|---`` line with as many cells,
    body rows up to a blank line) written as ``column: value`` lines; everything else, code blocks
    included, is kept as written. A table whose header row is empty has no column names: its rows
    are written as their cells."""
    lines = text.splitlines()
    out: list[str] = []
    index = 0
    in_code = False
    while index < len(lines):
        line = lines[index]
        if _FENCE.match(line):
            in_code = not in_code
        indented_code = line.startswith(("    ", "\t"))
        header = pipe_cells(line) if "|" in line and not (in_code or indented_code) else []
        if len(header) >= 2 and index + 1 < len(lines) and _is_delimiter(lines[index + 1], len(header)):
            rows = []
            index += 2
            while index < len(lines) and lines[index].strip() and "|" in lines[index]:
                rows.append(pipe_cells(lines[index]))
                index += 1
            out.extend(table.lines([header, *rows]) if any(header) else table.unnamed_lines(rows))
            continue
        out.append(line)
        index += 1
    return "\n".join(out)


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
