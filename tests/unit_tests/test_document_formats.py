"""The formats beyond PDF/Word/PowerPoint, on small files made here: HTML pages, .csv and .xlsx
tables, legacy Office files when their converter is missing or the file is damaged, OCR's
reporting (fake Tesseract answers), and how the pipeline stores a document that has only pictures.
The same paths on the real corpus and the real Tesseract / catdoc are in
integration_tests/test_documents_real.py."""

from __future__ import annotations

import datetime as dt
import io
import subprocess

import pytest
from PIL import Image

from keel.core.configuration import Configuration
from keel.loaders import CsvLoader, HtmlLoader, UnsupportedDocumentError, XlsxLoader, loader_for
from keel.loaders import ocr as ocr_module
from keel.loaders import picture_text as picture_text_module
from keel.loaders.image import ImageLoader
from keel.loaders.pipeline import ingest
from tests.fake_tesseract import fake_tesseract, tsv


class RecordingStore:
    """Keeps what the pipeline would store, without Redis or embeddings."""

    def __init__(self):
        self.documents = []

    def add_document(self, parents, children, batch_size=None):
        self.documents.append((parents, children))


def _text(path, **settings) -> str:
    cfg = Configuration(**settings) if settings else None
    return "\n".join(page.page_content for page in loader_for(path, cfg=cfg).lazy_load())


# --- HTML ------------------------------------------------------------------------------------------

HELP_PAGE = """<!doctype html><html><head><title>Billing help</title>
<style>body { color: red }</style><script>var secret = "tracking code";</script></head>
<body><nav><a href="/">Home</a></nav>
<h1>Billing help</h1><p>Invoices are sent on the <b>first</b> working day.</p>
<h2>Refunds</h2><ul><li>Ask within 30 days</li><li>Keep the receipt</li></ul>
<div hidden>internal note</div><noscript>enable javascript</noscript>
<table><tr><th>Plan</th><th>Price</th></tr><tr><td>Basic</td><td>5 EUR</td></tr></table>
</body></html>"""


def test_html_keeps_readable_text_and_headings_and_drops_what_a_browser_runs(tmp_path):
    page = tmp_path / "help.html"
    page.write_text(HELP_PAGE, encoding="utf-8")
    loader = loader_for(page)
    assert isinstance(loader, HtmlLoader)
    (document,) = list(loader.lazy_load())
    lines = document.page_content.splitlines()
    assert lines[0] == "# Billing help" and "## Refunds" in lines
    assert "Invoices are sent on the first working day." in lines
    assert "- Ask within 30 days" in lines and "Plan: Basic | Price: 5 EUR" in lines
    for hidden in ("tracking code", "color: red", "internal note", "enable javascript"):
        assert hidden not in document.page_content
    assert (document.metadata["page"], document.metadata["total_pages"]) == (1, 1)


def test_html_in_a_declared_legacy_encoding_reads_its_accents(tmp_path):
    page = tmp_path / "old.htm"
    page.write_bytes('<html><head><meta charset="windows-1252"></head><body><p>Café résumé</p></body></html>'
                     .encode("cp1252"))
    assert "Café résumé" in _text(page)


# --- tables ----------------------------------------------------------------------------------------

def test_csv_rows_become_column_value_lines_whatever_the_delimiter(tmp_path):
    table = tmp_path / "contacts.csv"
    table.write_text("Name;Team;Phone\nAda Lovelace;Billing;4021\nAlan Turing;;4022\n\n", encoding="utf-8")
    loader = loader_for(table)
    assert isinstance(loader, CsvLoader)
    assert list(loader.lazy_load())[0].page_content.splitlines() == [
        "Name: Ada Lovelace | Team: Billing | Phone: 4021",
        "Name: Alan Turing | Phone: 4022",  # an empty cell is left out, not written as "Team: "
    ]


def test_an_answer_taken_from_a_table_row_passes_the_answer_checks(tmp_path):
    """A later column's name ("Price") is read as a column, not as a person's name, so the
    figure it holds is bound to the answer's words."""
    from keel.checks.answer_fit import unbound_figures

    table = tmp_path / "prices.csv"
    table.write_text("Item,Price\nToner,40 EUR\nPaper,6 EUR\n", encoding="utf-8")
    rows = _text(table)
    assert unbound_figures("The price of Toner is 40 EUR [Source 1].", [rows]) == []


def test_csv_that_is_not_utf8_is_read_and_reported(tmp_path):
    table = tmp_path / "export.csv"
    table.write_bytes("Client,Town\nMüller,Köln\n".encode("cp1252"))
    loader = loader_for(table)
    assert "Client: Müller | Town: Köln" in list(loader.lazy_load())[0].page_content
    assert any("Windows-1252" in warning for warning in loader.warnings)


def test_a_table_over_the_row_limit_is_refused_with_the_setting_named(tmp_path):
    table = tmp_path / "big.csv"
    table.write_text("a,b\n" + "".join(f"{i},{i}\n" for i in range(20)), encoding="utf-8")
    with pytest.raises(UnsupportedDocumentError, match=r"big\.csv: too many table rows: more than 10 \(max_table_rows\)"):
        _text(table, max_table_rows=10)


SPEC_SHEET = """# Vela guide

| Specification | **Vela V20** | Vela V25 |
|:---|---:|:---:|
| Weight | 3.4 kg | 3.9 kg |
| Wi-Fi \\| bands | 2.4 GHz |  |

Runtime | see below: a pipe in prose is not a table.

```
| shell | pipe |
|---|---|
```
"""


def test_markdown_pipe_tables_become_column_value_lines_and_prose_is_kept(tmp_path):
    guide = tmp_path / "vela.md"
    guide.write_text(SPEC_SHEET, encoding="utf-8")
    assert _text(guide).splitlines() == [
        "# Vela guide",
        "",
        "Specification: Weight | Vela V20: 3.4 kg | Vela V25: 3.9 kg",
        "Specification: Wi-Fi \\| bands | Vela V20: 2.4 GHz",  # an escaped pipe is no border; an empty cell left out
        "",
        "Runtime | see below: a pipe in prose is not a table.",
        "", "```", "| shell | pipe |", "|---|---|", "```",  # a code block is kept as written
    ]


def test_a_markdown_table_without_column_names_is_written_as_labels_and_values(tmp_path):
    facts = tmp_path / "company.md"
    facts.write_text("| | |\r\n|---|---|\r\n| Registered name | Corvan Home B.V. |\r\n| Founded | 2014 |\r\n",
                     encoding="utf-8")
    assert _text(facts).splitlines() == ["Registered name: Corvan Home B.V.", "Founded: 2014"]


@pytest.mark.parametrize("text", [
    "| a | b |\n|---|\n| 1 | 2 |",  # the dashes line has fewer cells than the header
    "    | a | b |\n    |---|---|",  # an indented code block
    "a | b\n" + " " * 5000 + "x|",  # not a dashes line (and no slow regex on a hostile one)
])
def test_what_is_not_a_markdown_table_is_kept_as_written(tmp_path, text):
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    assert _text(page) == text


def test_a_markdown_table_counts_against_the_row_limit(tmp_path):
    guide = tmp_path / "big.md"
    guide.write_text("| a | b |\n| - | - |\n" + "".join(f"| {i} | {i} |\n" for i in range(20)), encoding="utf-8")
    with pytest.raises(UnsupportedDocumentError, match=r"big\.md: too many table rows: more than 10 \(max_table_rows\)"):
        _text(guide, max_table_rows=10)


def test_xlsx_sheets_are_pages_of_column_value_rows(tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    first = book.active
    first.title = "Staff"
    first.append(["Name", "Started", "Desk"])
    first.append(["Grace Hopper", dt.datetime(2021, 3, 4), 12.0])
    second = book.create_sheet("Rooms")
    second.append(["Room", None])
    second.append(["B12", "projector"])
    path = tmp_path / "office.xlsx"
    book.save(path)
    loader = loader_for(path)
    assert isinstance(loader, XlsxLoader)
    pages = list(loader.lazy_load())
    assert [p.metadata["page"] for p in pages] == [1, 2] and pages[0].metadata["total_pages"] == 2
    assert pages[0].page_content.splitlines() == ["Sheet: Staff", "Name: Grace Hopper | Started: 2021-03-04 | Desk: 12"]
    assert pages[1].page_content.splitlines() == ["Sheet: Rooms", "Room: B12 | column 2: projector"]


def test_a_damaged_xlsx_is_rejected_before_ingestion(tmp_path):
    path = tmp_path / "broken.xlsx"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(UnsupportedDocumentError, match=r"broken\.xlsx: corrupt or truncated Excel file"):
        loader_for(path)


# --- legacy Office files ---------------------------------------------------------------------------

OLE_HEADER = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


@pytest.mark.parametrize(("name", "program"), [("memo.doc", "catdoc"), ("sheet.xls", "xls2csv")])
def test_a_legacy_file_whose_converter_is_missing_says_what_to_install(tmp_path, monkeypatch, name, program):
    from keel.loaders import legacy

    monkeypatch.setattr(legacy.shutil, "which", lambda _: None)
    path = tmp_path / name
    path.write_bytes(OLE_HEADER + bytes(600))
    with pytest.raises(UnsupportedDocumentError, match=rf"needs {program}, which is not installed.*catdoc"):
        loader_for(path)


def test_a_legacy_file_that_is_not_ole2_is_refused_before_any_converter_runs(tmp_path, monkeypatch):
    from keel.loaders import legacy

    monkeypatch.setattr(legacy.subprocess, "run", lambda *a, **k: pytest.fail("the converter must not run"))
    path = tmp_path / "renamed.doc"
    path.write_bytes(b"just some text with a .doc name")
    with pytest.raises(UnsupportedDocumentError, match=r"renamed\.doc: corrupt legacy Word 97-2003 \(\.doc\) file"):
        loader_for(path)


def test_a_converter_that_hangs_is_stopped_at_its_limit(tmp_path, monkeypatch):
    from keel.loaders import legacy

    def hang(command, **kwargs):
        raise subprocess.TimeoutExpired(command, kwargs["timeout"])

    monkeypatch.setattr(legacy.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(legacy.subprocess, "run", hang)
    path = tmp_path / "slow.doc"
    path.write_bytes(OLE_HEADER + bytes(600))
    with pytest.raises(UnsupportedDocumentError, match=r"catdoc gave no result in 2 s \(legacy_converter_seconds\)"):
        loader_for(path, cfg=Configuration(legacy_converter_seconds=2))


def test_a_damaged_ppt_is_rejected_with_the_reason(tmp_path):
    path = tmp_path / "deck.ppt"
    path.write_bytes(OLE_HEADER + bytes(100))
    with pytest.raises(UnsupportedDocumentError, match=r"deck\.ppt: corrupt or encrypted legacy PowerPoint 97-2003"):
        loader_for(path)


# --- OCR, with Tesseract's answers faked -------------------------------------------------------------

def test_tesseract_words_become_lines_and_paragraphs_with_their_mean_confidence():
    text, confidence, words = ocr_module._text_from_tsv(tsv(
        (1, 1, 1, 90, "Opening"), (1, 1, 1, 80, "hours"), (1, 1, 2, 70, "9-17"), (2, 1, 1, 60, "Closed"),
    ))
    assert text == "Opening hours\n9-17\n\nClosed"
    assert (confidence, words) == (75.0, 4)


def _png(width=200, height=80) -> bytes:
    out = io.BytesIO()
    Image.new("CMYK", (width, height), (0, 0, 0, 0)).save(out, format="TIFF")
    return out.getvalue()


def test_ocr_says_what_to_install_when_tesseract_is_missing(monkeypatch):
    monkeypatch.setattr(ocr_module.shutil, "which", lambda _: None)
    assert "Tesseract is not installed" in ocr_module.ocr_available()
    with pytest.raises(ocr_module.OcrUnavailableError, match="tesseract-ocr"):
        ocr_module.ocr_image(_png())


def test_ocr_of_a_page_is_stopped_at_its_time_limit(monkeypatch):
    monkeypatch.setattr(ocr_module, "ocr_available", lambda cfg=None: None)

    def slow(command, **kwargs):
        raise subprocess.TimeoutExpired(command, kwargs["timeout"])

    monkeypatch.setattr(ocr_module.subprocess, "run", slow)
    with pytest.raises(ocr_module.OcrFailedError, match=r"OCR stopped after 3 s \(ocr_seconds_per_page\)"):
        ocr_module.ocr_image(_png(), Configuration(ocr_seconds_per_page=3))


def test_ocr_refuses_pictures_over_the_pixel_limit_before_running(monkeypatch):
    monkeypatch.setattr(ocr_module, "ocr_available", lambda cfg=None: None)
    monkeypatch.setattr(ocr_module.subprocess, "run", lambda *a, **k: pytest.fail("Tesseract must not run"))
    with pytest.raises(ocr_module.OcrFailedError, match=r"too large for OCR: 200x80 pixels \(limit 1000\)"):
        ocr_module.ocr_image(_png(), Configuration(ocr_max_image_pixels=1000))


def _fake_tesseract(monkeypatch, confidence: float, text: str = "Opening hours") -> list[str]:
    """Tesseract answering ``text`` for every picture; the modes of the pictures it was given."""
    fake = fake_tesseract(monkeypatch, confidence=confidence, words=lambda picture: text)
    return fake.modes_seen


def test_an_image_file_gives_its_picture_and_its_ocr_text_marked_as_ocr(tmp_path, monkeypatch):
    modes = _fake_tesseract(monkeypatch, confidence=91)
    path = tmp_path / "notice.tiff"
    path.write_bytes(_png())
    loader = loader_for(path)
    assert isinstance(loader, ImageLoader)
    image, text = list(loader.lazy_load())
    assert image.metadata["multimodal_type"] == "image" and image.metadata["colour_mode"] == "CMYK"
    assert text.page_content == "Opening hours"
    assert text.metadata["ocr"] is True and text.metadata["ocr_confidence"] == 91 and text.metadata["page"] == 1
    assert modes == ["RGB"] and loader.warnings == []  # CMYK converted for Tesseract


def test_a_low_confidence_page_is_reported(tmp_path, monkeypatch):
    _fake_tesseract(monkeypatch, confidence=31)
    path = tmp_path / "blurry.png"
    Image.new("L", (120, 60), 255).save(path)
    loader = loader_for(path)
    list(loader.lazy_load())
    assert loader.warnings == ["page 1: low OCR confidence 31 (below 60) on picture 1: its text may be wrong"]


def test_pictures_beyond_the_ocr_page_limit_are_counted_in_one_warning(tmp_path, monkeypatch):
    _fake_tesseract(monkeypatch, confidence=95)
    (tmp_path / "scan.tiff").write_bytes(_png())
    loader = ImageLoader(tmp_path / "scan.tiff", cfg=Configuration(ocr_max_pages=2))
    reader = picture_text_module.PictureText(loader)
    read = [reader.document(_png(), page=n, total_pages=5, image_index=n) for n in range(1, 6)]
    reader.finish()
    assert [doc is not None for doc in read] == [True, True, False, False, False]
    assert loader.warnings == ["OCR read the first 2 pictures only (ocr_max_pages); 3 more were not read"]


def test_ocr_switched_off_runs_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(ocr_module.subprocess, "run", lambda *a, **k: pytest.fail("Tesseract must not run"))
    path = tmp_path / "photo.png"
    Image.new("RGB", (64, 64)).save(path)
    pages = list(loader_for(path, cfg=Configuration(ocr_enabled=False)).lazy_load())
    assert [p.metadata["multimodal_type"] for p in pages] == ["image"]


# --- the pipeline ------------------------------------------------------------------------------------

def test_a_document_with_pictures_but_no_text_is_stored_as_its_pictures_with_a_warning(tmp_path, monkeypatch):
    from docx import Document as WordDocument

    _fake_tesseract(monkeypatch, confidence=90, text="")  # a photo: OCR finds no words
    picture = tmp_path / "photo.png"
    Image.new("RGB", (120, 90), (30, 120, 200)).save(picture)
    word = WordDocument()
    word.add_picture(str(picture))
    word.save(tmp_path / "album.docx")
    (tmp_path / "empty.csv").write_text("\n\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("The printer on floor 2 needs toner.", encoding="utf-8")
    store = RecordingStore()
    report = ingest([tmp_path / "album.docx", tmp_path / "empty.csv", tmp_path / "notes.txt"], store,
                    Configuration(), user_id="ann")
    assert report.documents == 2 and len(store.documents) == 2
    assert [e["source"].rsplit("/", 1)[-1] for e in report.errors] == ["empty.csv"]
    assert "no extractable text" in report.errors[0]["error"]
    (warning,) = report.warnings
    assert warning["source"].endswith("album.docx") and "stored as 1 picture(s) only" in warning["warning"]


def test_a_loader_warning_reaches_the_report_and_a_bad_file_does_not_stop_the_batch(tmp_path):
    (tmp_path / "a.csv").write_bytes("Client,Town\nMüller,Köln\n".encode("cp1252"))
    (tmp_path / "b.doc").write_bytes(b"not a word file")
    (tmp_path / "c.html").write_text("<p>Desk hours are 9 to 5.</p>", encoding="utf-8")
    report = ingest([tmp_path], RecordingStore(), Configuration(), user_id="ann")
    assert report.documents == 2
    assert [e["source"].rsplit("/", 1)[-1] for e in report.errors] == ["b.doc"]
    assert [w["source"].rsplit("/", 1)[-1] for w in report.warnings] == ["a.csv"]


def test_unreadable_ocr_text_never_hides_the_document_text(tmp_path, monkeypatch):
    """A broken picture inside a PDF costs its OCR text only (reported), never the page's text."""
    monkeypatch.setattr(ocr_module, "ocr_available", lambda cfg=None: None)
    monkeypatch.setattr(ocr_module.subprocess, "run", lambda command, **k: subprocess.CompletedProcess(
        command, 1, b"", b"Error in pixReadMem"))
    from fpdf import FPDF

    picture = tmp_path / "chart.png"
    Image.new("RGB", (200, 120), (200, 10, 10)).save(picture)
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Quarterly figures")
    pdf.image(str(picture), x=10, y=30, w=60)
    pdf.output(str(tmp_path / "figures.pdf"))
    loader = loader_for(tmp_path / "figures.pdf")
    pages = list(loader.lazy_load())
    assert "Quarterly figures" in pages[0].page_content
    assert loader.warnings == ["page 1: picture 1 not read by OCR: Tesseract failed (exit 1): Error in pixReadMem"]



def test_a_legacy_file_named_like_an_option_reaches_the_converter_as_a_path(tmp_path, monkeypatch):
    from keel.loaders import legacy

    seen = []

    def convert(command, **kwargs):
        seen.append(command)
        return subprocess.CompletedProcess(command, 0, b"Minutes of the meeting", b"")

    monkeypatch.setattr(legacy.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(legacy.subprocess, "run", convert)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-b.doc").write_bytes(OLE_HEADER + bytes(600))
    assert _text("-b.doc") == "Minutes of the meeting"
    assert seen[0][-1] == str(tmp_path / "-b.doc")


def test_a_picture_that_cannot_be_decoded_is_reported_and_the_text_kept(tmp_path):
    from keel.loaders.image import embedded_image_document

    (tmp_path / "memo.txt").write_text("Memo", encoding="utf-8")
    loader = loader_for(tmp_path / "memo.txt")
    assert embedded_image_document(loader, b"\x89PNG\r\n\x1a\n broken", page=2, total_pages=3, image_index=4) is None
    (warning,) = loader.warnings
    assert warning.startswith("page 2: picture 4 cannot be read, it is not kept: ") and "image" in warning
