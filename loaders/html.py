"""HTML pages (help-desk articles, exported wikis) as readable text, page 1 of 1.

What a browser shows is kept and what it runs or hides is dropped: scripts, styles, templates,
embedded objects, ``hidden`` elements and <noscript> fallbacks go; headings stay as Markdown headings (``## Billing``) so
the splitter and the n-gram hints see the page's structure; list items become ``- item`` lines;
tables become one ``column: value`` line per row (loaders/tables.py), the header row naming the
columns. The page's <title> comes first. The encoding is the one the page declares (or UTF-8).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.documents import Document

from keel.loaders.base import KeelLoader
from keel.loaders.errors import DocumentLoadError
from keel.loaders.tables import TableText
from keel.splitters.ngram_hints import FONT_RUNS_KEY

HTML_EXTENSIONS = (".html", ".htm", ".xhtml")
_DROPPED = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "head")
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_BLOCKS = {"p", "div", "section", "article", "main", "header", "footer", "aside", "nav", "blockquote", "pre",
           "address", "figure", "figcaption", "dl", "dt", "dd", "ul", "ol", "form", "fieldset", "details",
           "summary", "body", "br", "hr"}
# Printed sizes of headings (a browser's defaults, in points) for the n-gram hints' font weights.
_HEADING_PT = {1: 24.0, 2: 18.0, 3: 14.0, 4: 12.0, 5: 10.0, 6: 8.0}
_BODY_PT = 12.0


class HtmlLoader(KeelLoader):
    """An HTML file as one text document."""

    def lazy_load(self) -> Iterator[Document]:
        from bs4 import BeautifulSoup

        data = self.read_bytes()
        if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise DocumentLoadError(self.name, "not HTML: it contains NUL bytes (a binary file?)")
        try:
            soup = BeautifulSoup(data, "lxml")
        except Exception as exc:  # the parser is tolerant; this is a file it cannot even start on
            raise DocumentLoadError(self.name, f"unreadable HTML: {type(exc).__name__}: {exc}") from exc
        title = " ".join(soup.title.get_text(" ").split()) if soup.title else ""
        for tag in soup.find_all(_DROPPED):
            tag.decompose()
        for tag in soup.find_all(attrs={"hidden": True}):
            tag.decompose()
        writer = _TextWriter(self)
        writer.walk(soup.body or soup)
        lines = writer.finish()
        if title and (not lines or lines[0].lstrip("# ") != title):
            lines.insert(0, f"# {title}")
            writer.runs.insert(0, [title, _HEADING_PT[1]])
        meta = self.metadata(1, 1)
        if writer.runs:
            meta[FONT_RUNS_KEY] = writer.runs
        yield Document(page_content="\n".join(lines), metadata=meta)


class _TextWriter:
    """Walks the tree and writes lines: block elements end a line, inline ones join it."""

    def __init__(self, loader: KeelLoader):
        self.table = TableText(loader)
        self.lines: list[str] = []
        self.runs: list[list[Any]] = []
        self.current: list[str] = []

    def walk(self, node: Any) -> None:
        from bs4 import NavigableString, Tag
        from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

        for child in node.children:
            if isinstance(child, (Comment, Declaration, Doctype, ProcessingInstruction)):
                continue
            if isinstance(child, NavigableString):
                self.current.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name.lower()
            if name in _HEADINGS:
                self.end_line()
                text = " ".join(child.get_text(" ").split())
                if text:
                    self.lines.append(f"{'#' * _HEADINGS[name]} {text}")
                    self.runs.append([text, _HEADING_PT[_HEADINGS[name]]])
            elif name == "table":
                self.end_line()
                rows = ([cell.get_text(" ") for cell in row.find_all(["th", "td"])] for row in child.find_all("tr"))
                self.lines.extend(self.table.lines(rows))
            elif name == "li":
                self.end_line()
                self.current.append("- ")
                self.walk(child)
                self.end_line()
            elif name in _BLOCKS:
                self.end_line()
                self.walk(child)
                self.end_line()
            else:
                self.walk(child)

    def end_line(self) -> None:
        text = " ".join("".join(self.current).split())
        self.current.clear()
        if text and text != "-":
            self.lines.append(text)
            self.runs.append([text, _BODY_PT])

    def finish(self) -> list[str]:
        self.end_line()
        return self.lines
