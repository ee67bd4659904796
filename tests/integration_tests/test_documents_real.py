"""The documents people actually have, on the real tools and the real corpus: Tesseract reading a
picture, a rotated scanned table and a scanned memo; catdoc reading a legacy .doc; a legacy .ppt
read from its records, saying what its .pptx twin says; a PDF with a broken page tree read as far
as it goes; and the scans and legacy files ingested into real Redis Stack and found by their words."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from keel.core.configuration import Configuration
from keel.loaders import loader_for
from keel.loaders.ocr import ocr_available
from keel.loaders.pipeline import ingest

needs_tesseract = pytest.mark.skipif(
    ocr_available() is not None, reason=f"{ocr_available()} - scripts/setup.sh installs it"
)
needs_catdoc = pytest.mark.skipif(
    shutil.which("catdoc") is None, reason="catdoc is not installed (Debian package catdoc; scripts/setup.sh installs it)"
)


@pytest.fixture
def examples(shared_data) -> Path:
    return shared_data / "docs" / "unstructured-example-docs"


def _texts(pages, ocr: bool | None = None) -> str:
    return "\n".join(
        p.page_content for p in pages
        if p.metadata["multimodal_type"] == "text" and (ocr is None or bool(p.metadata.get("ocr")) == ocr)
    )


@needs_tesseract
def test_tesseract_reads_a_picture_of_printed_text(tmp_path):
    picture = Image.new("RGB", (900, 220), "white")
    draw = ImageDraw.Draw(picture)
    font = ImageFont.load_default(size=48)
    draw.text((30, 30), "Reset your password", fill="black", font=font)
    draw.text((30, 120), "from the Account page", fill="black", font=font)
    path = tmp_path / "notice.png"
    picture.save(path)
    loader = loader_for(path)
    image, text = list(loader.lazy_load())
    assert image.metadata["multimodal_type"] == "image"
    assert text.page_content.split() == ["Reset", "your", "password", "from", "the", "Account", "page"]
    assert text.metadata["ocr"] is True and text.metadata["ocr_confidence"] > 80 and loader.warnings == []


@needs_tesseract
@pytest.mark.shared_data
def test_a_sideways_scanned_table_is_read_the_right_way_up(examples):
    pages = list(loader_for(examples / "single_table.pdf").lazy_load())
    ocr = [p for p in pages if p.metadata.get("ocr")]
    assert [p.metadata["page"] for p in ocr] == [1]
    for word in ("Processing", "chunks", "Base", "Chipper", "64,058"):
        assert word in ocr[0].page_content, word


@needs_tesseract
@pytest.mark.shared_data
def test_a_scanned_memo_with_a_poor_text_layer_also_gets_its_ocr_text(examples):
    pages = list(loader_for(examples / "pdf-with-ocr-text.pdf").lazy_load())
    read = _texts(pages, ocr=True)
    assert "MESSRS" in read and "HOUTOCK" not in _texts(pages, ocr=False)


@needs_catdoc
@pytest.mark.shared_data
def test_a_legacy_word_file_is_read_by_catdoc(examples):
    pages = list(loader_for(examples / "fake.doc").lazy_load())
    assert _texts(pages).strip() == "Lorem ipsum dolor sit amet."
    assert pages[0].metadata["source"] == "fake.doc"


@pytest.mark.shared_data
def test_a_legacy_powerpoint_file_says_what_its_pptx_twin_says(examples):
    legacy = list(loader_for(examples / "fake-power-point.ppt").lazy_load())
    current = list(loader_for(examples / "fake-power-point.pptx").lazy_load())
    assert [p.metadata["page"] for p in legacy] == [1]
    assert set(_texts(legacy).splitlines()) == set(_texts(current).splitlines())
    assert "Click to edit" not in _texts(legacy)  # the master slide's placeholders are left out


@pytest.mark.shared_data
def test_a_pdf_with_a_broken_page_tree_keeps_what_can_be_read_and_reports_the_rest(shared_data):
    path = shared_data / "docs" / "pypdf-sample-files" / "017-unreadable-meta-data" / "unreadablemetadata.pdf"
    loader = loader_for(path, cfg=Configuration(ocr_enabled=False))
    pages = list(loader.lazy_load())
    text_pages = [p for p in pages if p.metadata["multimodal_type"] == "text"]
    assert [p.metadata["page"] for p in text_pages] == [1, 2, 3]
    assert "5 Watt,Wirewound" in text_pages[0].page_content
    assert "\ufffd" not in _texts(pages)  # undecodable glyphs are reported, not stored
    assert loader.warnings[0].startswith("damaged page tree (Invalid object in /Pages): 3 page(s) recovered")
    assert [w.split(":")[0] for w in loader.warnings[1:]] == ["page 2", "page 3"]


@needs_tesseract
@needs_catdoc
@pytest.mark.shared_data
def test_scans_and_legacy_files_are_ingested_and_found_by_their_words(examples, make_store, unique_user):
    from keel.retrievers.parent_document import KeelParentRetriever

    store = make_store()
    files = [examples / name for name in ("single_table.pdf", "fake.doc", "fake-power-point.ppt")]
    report = ingest(files, store, store.cfg, user_id=unique_user)
    assert report.errors == [] and report.documents == 3
    stored = {doc["source"] for doc in store.list_documents(unique_user)}
    assert stored == {"single_table.pdf", "fake.doc", "fake-power-point.ppt"}
    top = KeelParentRetriever(store=store, user_id=unique_user).invoke("Chipper total chunks per document")
    assert top[0].metadata["source"] == "single_table.pdf" and top[0].metadata.get("ocr") is True
    top = KeelParentRetriever(store=store, user_id=unique_user).invoke("How do I add a bullet slide?")
    assert top[0].metadata["source"] == "fake-power-point.ppt"


@pytest.mark.skipif(shutil.which("xls2csv") is None, reason="xls2csv is not installed (Debian package catdoc)")
def test_a_legacy_excel_file_is_read_by_xls2csv_as_column_value_rows(tmp_path):
    xlwt = pytest.importorskip("xlwt", reason="xlwt (the test extra) writes the .xls")
    book = xlwt.Workbook()
    staff = book.add_sheet("Staff")
    for row, values in enumerate([["Name", "Team", "Desk"], ["Ada Lovelace", "Billing", 12], ["Alan Turing", "", 7.5]]):
        for column, value in enumerate(values):
            staff.write(row, column, value)
    rooms = book.add_sheet("Rooms")
    for row, values in enumerate([["Room", "Has"], ["B12", "projector, screen"]]):
        for column, value in enumerate(values):
            rooms.write(row, column, value)
    book.save(str(tmp_path / "office.xls"))
    pages = list(loader_for(tmp_path / "office.xls").lazy_load())
    assert [(p.metadata["page"], p.metadata["total_pages"]) for p in pages] == [(1, 2), (2, 2)]
    assert [p.page_content.splitlines()[0] for p in pages] == ["Sheet: Staff", "Sheet: Rooms"]
    assert pages[0].page_content.splitlines()[1:] == ["Name: Ada Lovelace | Team: Billing | Desk: 12",
                                                      "Name: Alan Turing | Desk: 7.5"]
    assert pages[1].page_content.splitlines()[1:] == ["Room: B12 | Has: projector, screen"]


@pytest.mark.skipif(shutil.which("xls2csv") is None, reason="xls2csv is not installed (Debian package catdoc)")
def test_an_xls_with_an_empty_sheet_never_gets_another_sheets_name(tmp_path):
    """xls2csv leaves empty sheets out, so the names no longer line up: none is given."""
    xlwt = pytest.importorskip("xlwt", reason="xlwt (the test extra) writes the .xls")
    book = xlwt.Workbook()
    for title, cells in (("Staff", ["Name", "Ada"]), ("Blank", []), ("Rooms", ["Room", "B12"])):
        sheet = book.add_sheet(title)
        for row, value in enumerate(cells):
            sheet.write(row, 0, value)
    book.save(str(tmp_path / "gap.xls"))
    pages = list(loader_for(tmp_path / "gap.xls").lazy_load())
    assert [p.page_content for p in pages] == ["Name: Ada", "Room: B12"]
