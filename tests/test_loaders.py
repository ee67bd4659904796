"""Loaders and the dispatcher on files the tests write: text, Markdown, PDF (plain, encrypted,
truncated), and every rejection reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from pypdf import PdfWriter

from graph.configuration import Configuration
from loaders import (
    DocumentLoadError,
    PasswordRequiredError,
    PDFLoader,
    TextLoader,
    UnsupportedDocumentError,
    loader_for,
)
from tests.pdf_factory import make_pdf

PAGES = ["The harbour opens at dawn.", "The lighthouse was built in 1874 (by Mara Holt).", "Page three, the end."]


@pytest.fixture
def pdf(tmp_path) -> Path:
    return make_pdf(tmp_path / "report.pdf", PAGES, title="Harbour report")


def test_pdf_gives_one_document_per_page_with_inheritable_metadata(pdf):
    docs = list(loader_for(pdf, user_id="alice", conversation_id="conv-1").lazy_load())
    assert [d.page_content for d in docs] == PAGES
    assert [d.metadata["page"] for d in docs] == [1, 2, 3]
    for doc in docs:
        meta = doc.metadata
        assert meta["total_pages"] == 3 and meta["source"] == "report.pdf"
        assert meta["user_id"] == "alice" and meta["conversation_id"] == "conv-1"
        assert meta["multimodal_type"] == "text" and meta["chunk_index"] == 0
        assert len(meta["doc_id"]) == 24 and int(meta["doc_id"], 16) >= 0
    assert isinstance(loader_for(pdf), PDFLoader)


def test_doc_id_comes_from_the_content_not_the_name(tmp_path, pdf):
    copy = tmp_path / "renamed.pdf"
    copy.write_bytes(pdf.read_bytes())
    changed = make_pdf(tmp_path / "changed.pdf", [*PAGES[:2], "Page three, changed."])
    ids = [next(loader_for(p).lazy_load()).metadata["doc_id"] for p in (pdf, copy, changed)]
    assert ids[0] == ids[1] != ids[2]


def test_pdf_factory_wraps_long_lines_and_keeps_the_title(tmp_path):
    from pypdf import PdfReader

    long_line = " ".join(f"word{i}" for i in range(200))
    path = make_pdf(tmp_path / "long.pdf", [long_line], title="Long (one)")
    reader = PdfReader(path, strict=True)
    text = reader.pages[0].extract_text()
    assert reader.metadata.title == "Long (one)"
    assert text.count("\n") >= 10 and text.split() == long_line.split()


def test_encrypted_pdf_needs_the_password(tmp_path, pdf):
    writer = PdfWriter(clone_from=str(pdf))
    writer.encrypt("s3cret", algorithm="RC4-128")
    locked = tmp_path / "locked.pdf"
    writer.write(locked)
    with pytest.raises(PasswordRequiredError, match=r"locked\.pdf.*password is required"):
        loader_for(locked)
    with pytest.raises(PasswordRequiredError, match="password is wrong"):
        loader_for(locked, "nope")
    assert [d.page_content for d in loader_for(locked, "s3cret").lazy_load()] == PAGES


def test_text_and_markdown(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_bytes("\ufeff# Título\n\nCafé notes.".encode("utf-8"))
    (doc,) = loader_for(notes, user_id="bob").lazy_load()
    assert doc.page_content == "# Título\n\nCafé notes."
    assert doc.metadata["page"] == 1 and doc.metadata["total_pages"] == 1 and doc.metadata["source"] == "notes.md"
    assert isinstance(loader_for(tmp_path / "notes.md"), TextLoader)
    plain = tmp_path / "a.TXT"
    plain.write_text("upper-case extension")
    assert next(loader_for(plain).lazy_load()).page_content == "upper-case extension"


def test_undecodable_text_is_a_clear_error(tmp_path):
    bad = tmp_path / "binary.txt"
    bad.write_bytes(b"ok so far \xff\xfe then binary")
    with pytest.raises(DocumentLoadError, match=r"binary\.txt: not UTF-8 text: undecodable byte 0xff at offset 10"):
        list(loader_for(bad).lazy_load())


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("old.doc", b"\xd0\xcf\x11\xe0 legacy", r"old\.doc: legacy Word"),
        ("old.ppt", b"\xd0\xcf\x11\xe0 legacy", r"old\.ppt: legacy PowerPoint"),
        ("image.bmp", b"BM....", r"image\.bmp: unsupported file type \.bmp"),
        ("README", b"no extension", r"README: unsupported file type \(no extension\)"),
        ("empty.txt", b"", r"empty\.txt: empty file"),
        ("fake.pdf", b"this is not a pdf at all", r"fake\.pdf: corrupt PDF: no %PDF- header"),
        ("junk.pdf", b"%PDF-1.4\nnothing here\n%%EOF\n", r"junk\.pdf: corrupt PDF"),
    ],
)
def test_dispatcher_rejects_with_the_file_and_the_reason(tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UnsupportedDocumentError, match=reason):
        loader_for(path)


def test_truncated_pdf_is_rejected(tmp_path, pdf):
    data = pdf.read_bytes()
    for cut in (len(data) // 2, len(data) - 20):
        truncated = tmp_path / f"cut{cut}.pdf"
        truncated.write_bytes(data[:cut])
        with pytest.raises(UnsupportedDocumentError, match=rf"cut{cut}\.pdf: corrupt or truncated PDF"):
            loader_for(truncated)


def test_size_and_page_limits_come_from_the_configuration(tmp_path, pdf):
    with pytest.raises(UnsupportedDocumentError, match=r"report\.pdf: too many pages: 3 \(limit 2\)"):
        loader_for(pdf, cfg=Configuration(max_pages=2))
    big = tmp_path / "big.txt"
    big.write_text("x" * 101)
    with pytest.raises(UnsupportedDocumentError, match=r"big\.txt: too large: 101 bytes \(limit 100\)"):
        loader_for(big, cfg=Configuration(max_file_bytes=100))
    assert loader_for(pdf, cfg=Configuration(max_pages=3))


def test_missing_files_and_folders_are_named(tmp_path):
    with pytest.raises(UnsupportedDocumentError, match=r"nope\.pdf: no such file"):
        loader_for(tmp_path / "nope.pdf")
    with pytest.raises(UnsupportedDocumentError, match="is a folder"):
        loader_for(tmp_path)
