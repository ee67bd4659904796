"""Loaders and the dispatcher on files the tests write: text, Markdown, PDF (plain, encrypted,
truncated, with fonts and images), Word, PowerPoint, images, base64 uploads, and every rejection
reason (legacy formats, damaged files, zip bombs, size and page limits)."""

from __future__ import annotations

import base64
import io
import struct
import zipfile
import zlib
from pathlib import Path

import pytest
from langchain_core.documents.base import Blob
from PIL import Image
from pypdf import PdfWriter

from keel.core.configuration import Configuration
from keel.loaders import (
    Base64BlobParser,
    DocumentLoadError,
    DocxLoader,
    PlainTextLoader,
    PasswordRequiredError,
    PdfLoader,
    PptxLoader,
    UnsupportedDocumentError,
    loader_for,
    loader_for_base64,
)
from keel.loaders.ooxml import OLE_MAGIC
from tests.document_factory import add_zip_bomb, make_docx, make_image, make_pptx, make_rich_pdf
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
    assert isinstance(loader_for(pdf), PdfLoader)


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
    assert isinstance(loader_for(tmp_path / "notes.md"), PlainTextLoader)
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
        ("old.doc", b"\xd0\xcf\x11\xe0 legacy", r"old\.doc: corrupt legacy Word 97-2003 \(\.doc\) file: not an OLE2"),
        ("old.ppt", b"\xd0\xcf\x11\xe0 legacy", r"old\.ppt: corrupt or encrypted legacy PowerPoint 97-2003"),
        ("image.bmp", b"BM....", r"image\.bmp: unsupported file type \.bmp"),
        ("disguised.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1 old", r"disguised\.docx: legacy or encrypted Word file"),
        ("disguised.pptx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1 old", r"disguised\.pptx: legacy or encrypted PowerPoint"),
        ("notzip.docx", b"plain text, not a package", r"notzip\.docx: corrupt Word file: not a ZIP package"),
        ("broken.png", b"\x89PNG\r\n\x1a\n and then nothing", r"broken\.png: "),
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


# --- PDF fonts and images (fpdf2 writes them) ---------------------------------------------------
def test_pdf_keeps_font_sizes_per_run_and_images_with_their_shape(tmp_path):
    path = make_rich_pdf(
        tmp_path / "rich.pdf",
        [
            [("text", 22, "Mandatory Teams"), ("text", 10, "Every employee joins the mandatory teams."), ("image", (90, 60), "RGB")],
            [("text", 10, "The second page."), ("image", (64, 48), "L"), ("image", (8, 8), "RGB")],
        ],
    )
    docs = list(loader_for(path, user_id="alice").lazy_load())
    assert [(d.metadata["multimodal_type"], d.metadata["page"]) for d in docs] == [
        ("text", 1), ("image", 1), ("text", 2), ("image", 2)
    ], "reading order: each page's text, then its images; the 8x8 one is decoration and skipped"
    runs = docs[0].metadata["font_runs"]
    sizes = {text.strip(): size for text, size in runs}
    assert sizes["Mandatory Teams"] == pytest.approx(22, abs=0.2)
    assert max(size for text, size in runs if "employee" in text) == pytest.approx(10, abs=0.2)
    first, second = docs[1].metadata, docs[3].metadata
    assert (first["width"], first["height"], first["channels"], first["colour_mode"]) == (90, 60, 3, "RGB")
    assert (second["width"], second["height"], second["channels"], second["colour_mode"]) == (64, 48, 1, "L")
    assert first["image_index"] == 1 and second["image_index"] == 2
    assert first["user_id"] == "alice" and first["total_pages"] == 2 and first["doc_id"] == docs[0].metadata["doc_id"]
    decoded = Image.open(io.BytesIO(base64.b64decode(docs[1].page_content)))
    assert decoded.size == (90, 60)


def test_images_can_be_left_out_and_the_size_threshold_is_configurable(tmp_path):
    path = make_rich_pdf(tmp_path / "pics.pdf", [[("text", 11, "Text."), ("image", (40, 40), "RGB")]])
    kinds = lambda cfg: [d.metadata["multimodal_type"] for d in loader_for(path, cfg=cfg).lazy_load()]  # noqa: E731
    assert kinds(Configuration()) == ["text", "image"]
    assert kinds(Configuration(extract_images=False)) == ["text"]
    assert kinds(Configuration(min_image_side_pixels=41)) == ["text"]


def test_pdf_encrypted_by_another_producer_opens_with_its_password(tmp_path):
    path = make_rich_pdf(tmp_path / "secret.pdf", [[("text", 12, "Launch code is in the blue binder.")]], password="pw1")
    with pytest.raises(PasswordRequiredError, match=r"secret\.pdf: encrypted PDF: a password is required"):
        loader_for(path)
    (doc,) = loader_for(path, "pw1").lazy_load()
    assert "blue binder" in doc.page_content


# --- Word ---------------------------------------------------------------------------------------
def test_docx_reads_headings_paragraphs_tables_headers_footers_and_pictures_in_order(tmp_path):
    path = make_docx(
        tmp_path / "rules.docx",
        heading="Harbour rules",
        paragraphs=("Boats must moor at the eastern quay.", "Fees are paid monthly."),
        table=[["Vessel", "Fee"], ["Dinghy", "12 EUR"]],
        header="Port of Veria",
        footer="Page footer text",
        image=(100, 70),
        image_alt="Map of the quay",
        second_page="Winter berths are assigned in October.",
    )
    loader = loader_for(path, user_id="bob", conversation_id="c9")
    assert isinstance(loader, DocxLoader)
    docs = list(loader.lazy_load())
    assert [(d.metadata["multimodal_type"], d.metadata["page"], d.metadata["total_pages"]) for d in docs] == [
        ("text", 1, 2), ("image", 1, 2), ("text", 2, 2)
    ]
    first, image, last = docs
    assert first.page_content.split("\n") == [
        "Port of Veria", "Harbour rules", "Boats must moor at the eastern quay.", "Fees are paid monthly.",
        "Vessel | Fee", "Dinghy | 12 EUR",
    ]
    assert last.page_content.split("\n") == ["Winter berths are assigned in October.", "Page footer text"]
    assert image.metadata["alt_text"] == "Map of the quay" and image.metadata["width"] == 100
    assert image.metadata["source"] == "rules.docx" and image.metadata["conversation_id"] == "c9"
    sizes = dict((text, size) for text, size in first.metadata["font_runs"])
    assert sizes["Harbour rules"] > sizes["Boats must moor at the eastern quay."], "headings are set larger"


def test_zip_bomb_inside_a_docx_is_rejected_before_unpacking(tmp_path):
    path = add_zip_bomb(make_docx(tmp_path / "bomb.docx"))
    assert path.stat().st_size < 1_000_000
    with pytest.raises(UnsupportedDocumentError, match=r"bomb\.docx: zip bomb: part word/media/bomb\.bin unpacks \d+x"):
        loader_for(path)
    small = make_docx(tmp_path / "big.docx", paragraphs=("x " * 5000,))
    with pytest.raises(UnsupportedDocumentError, match=r"big\.docx: zip bomb: unpacks to \d+ bytes \(limit 1000\)"):
        loader_for(small, cfg=Configuration(max_unpacked_bytes=1000))


def test_truncated_office_files_are_rejected(tmp_path):
    for maker, name in ((make_docx, "cut.docx"), (lambda p: make_pptx(p, [{"title": "T"}]), "cut.pptx")):
        data = maker(tmp_path / f"whole-{name}").read_bytes()
        (tmp_path / name).write_bytes(data[: len(data) // 2])
        with pytest.raises(UnsupportedDocumentError, match=rf"{name.replace('.', '[.]')}: corrupt or truncated"):
            loader_for(tmp_path / name)


# --- PowerPoint ---------------------------------------------------------------------------------
def test_pptx_reads_slides_tables_notes_and_pictures_with_the_slide_as_page(tmp_path):
    path = make_pptx(
        tmp_path / "deck.pptx",
        [
            {"title": "Quarterly results", "body": ["Revenue grew by 8%", "Costs fell"], "notes": "Thank the team",
             "image": (80, 80), "image_alt": "Company logo"},
            {"title": "Fees", "table": [["Vessel", "Fee"], ["Dinghy", "12 EUR"]]},
        ],
    )
    docs = list(loader_for(path).lazy_load())
    assert isinstance(loader_for(path), PptxLoader)
    assert [(d.metadata["multimodal_type"], d.metadata["page"], d.metadata["total_pages"]) for d in docs] == [
        ("text", 1, 2), ("image", 1, 2), ("text", 2, 2)
    ]
    assert docs[0].page_content.split("\n") == [
        "Quarterly results", "Revenue grew by 8%", "Costs fell", "Speaker notes: Thank the team"
    ]
    assert docs[2].page_content.split("\n") == ["Fees", "Vessel | Fee", "Dinghy | 12 EUR"]
    assert docs[1].metadata["alt_text"] == "Company logo" and docs[1].metadata["channels"] == 3
    sizes = dict((text, size) for text, size in docs[0].metadata["font_runs"])
    assert sizes["Quarterly results"] > sizes["Revenue grew by 8%"] == 20


# --- images ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "mode", "fmt", "mime", "channels"),
    [
        ("photo.png", "RGBA", "PNG", "image/png", 4),
        ("photo.jpg", "RGB", "JPEG", "image/jpeg", 3),
        ("scan.jpeg", "CMYK", "JPEG", "image/jpeg", 4),
        ("anim.gif", "L", "GIF", "image/gif", 1),
        ("pic.webp", "RGB", "WEBP", "image/webp", 3),
    ],
)
def test_image_files_become_one_image_document(tmp_path, name, mode, fmt, mime, channels):
    data = make_image((33, 21), mode, fmt)
    (tmp_path / name).write_bytes(data)
    (doc,) = loader_for(tmp_path / name, user_id="carol").lazy_load()
    meta = doc.metadata
    assert meta["multimodal_type"] == "image" and meta["mime_type"] == mime
    assert (meta["width"], meta["height"], meta["channels"]) == (33, 21, channels)
    assert (meta["page"], meta["total_pages"], meta["source"], meta["user_id"]) == (1, 1, name, "carol")
    assert base64.b64decode(doc.page_content) == data


def test_image_that_claims_a_huge_size_is_refused_as_a_decompression_bomb(tmp_path):
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", 60_000, 60_000, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")
    (tmp_path / "huge.png").write_bytes(png)
    with pytest.raises(UnsupportedDocumentError, match=r"huge\.png: image too large to decode safely"):
        loader_for(tmp_path / "huge.png")


# --- base64 uploads -------------------------------------------------------------------------------
def test_base64_upload_is_routed_by_name_mime_type_or_content(tmp_path, pdf):
    encoded = base64.b64encode(pdf.read_bytes()).decode("ascii")
    by_name = list(loader_for_base64("report.pdf", encoded, user_id="dan").lazy_load())
    by_mime = list(loader_for_base64("upload", encoded, "application/pdf").lazy_load())
    by_content = list(loader_for_base64("upload.bin", encoded).lazy_load())
    from_file = list(loader_for(pdf).lazy_load())
    for docs in (by_name, by_mime, by_content):
        assert [d.page_content for d in docs] == PAGES
        assert docs[0].metadata["doc_id"] == from_file[0].metadata["doc_id"], "same bytes, same doc_id"
    assert by_name[0].metadata["source"] == "report.pdf" and by_name[0].metadata["user_id"] == "dan"
    data_url = "data:application/pdf;base64," + encoded[:40] + "\n" + encoded[40:]
    assert [d.page_content for d in loader_for_base64("x", data_url).lazy_load()] == PAGES

    docx_b64 = base64.urlsafe_b64encode(make_docx(tmp_path / "w.docx").read_bytes()).decode().rstrip("=")
    word = list(loader_for_base64("C:\\Users\\me\\notes.docx", docx_b64).lazy_load())
    assert word[0].metadata["source"] == "notes.docx" and "Harbour rules" in word[0].page_content

    parser = Base64BlobParser(user_id="erin")
    blob = Blob.from_data(encoded, path="via-parser.pdf", mime_type="application/pdf")
    parsed = parser.parse(blob)
    assert [d.page_content for d in parsed] == PAGES and parsed[0].metadata["user_id"] == "erin"


@pytest.mark.parametrize(
    ("name", "payload", "mime", "reason"),
    [
        ("a.pdf", "not base64 at all!", None, r"a\.pdf: invalid base64"),
        ("b.pdf", "", None, r"b\.pdf: empty file"),
        ("c.doc", base64.b64encode(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1").decode(), None,
         r"c\.doc: (corrupt or encrypted legacy Word 97-2003 \(\.doc\) file: catdoc failed|.* needs catdoc)"),
        ("upload", base64.b64encode(b"\xd0\xcf\x11\xe0").decode(), "application/vnd.ms-powerpoint",
         r"upload: corrupt or encrypted legacy PowerPoint 97-2003 \(\.ppt\) file"),
        ("d", base64.b64encode(b"mystery bytes").decode(), "application/octet-stream", r"d: unsupported file type"),
        ("", "QUJD", None, r"upload: no file name given"),
    ],
)
def test_bad_base64_uploads_are_named_errors(name, payload, mime, reason):
    with pytest.raises(UnsupportedDocumentError, match=reason):
        loader_for_base64(name, payload, mime)


def test_oversized_base64_is_refused_before_decoding():
    payload = "A" * 4000
    with pytest.raises(UnsupportedDocumentError, match=r"big\.txt: too large: about 3000 bytes \(limit 100\)"):
        loader_for_base64("big.txt", payload, cfg=Configuration(max_file_bytes=100))


# --- page limits, zip bombs and name-less uploads of Office files ------------------------------
def test_word_and_powerpoint_page_limits_come_from_the_configuration(tmp_path):
    word = make_docx(tmp_path / "two.docx", paragraphs=("First page.",), second_page="Second page.")
    assert len({d.metadata["page"] for d in loader_for(word).lazy_load()}) == 2
    with pytest.raises(UnsupportedDocumentError, match=r"two\.docx: too many pages: 2 \(limit 1\)"):
        list(loader_for(word, cfg=Configuration(max_pages=1)).lazy_load())
    deck = make_pptx(tmp_path / "three.pptx", [{"title": f"Slide {i}"} for i in range(3)])
    with pytest.raises(UnsupportedDocumentError, match=r"three\.pptx: too many slides: 3 \(limit 2\)"):
        list(loader_for(deck, cfg=Configuration(max_pages=2)).lazy_load())
    assert len(list(loader_for(deck, cfg=Configuration(max_pages=3)).lazy_load())) == 3


def test_zip_bomb_inside_a_pptx_is_rejected_before_unpacking(tmp_path):
    path = add_zip_bomb(make_pptx(tmp_path / "bomb.pptx", [{"title": "Quarterly"}]), member="ppt/media/bomb.bin")
    assert path.stat().st_size < 1_000_000
    with pytest.raises(UnsupportedDocumentError, match=r"bomb\.pptx: zip bomb: part ppt/media/bomb\.bin unpacks \d+x"):
        loader_for(path)
    deck = make_pptx(tmp_path / "parts.pptx", [{"title": "One"}])
    with pytest.raises(UnsupportedDocumentError, match=r"parts\.pptx: zip bomb: \d+ parts \(limit 5\)"):
        loader_for(deck, cfg=Configuration(max_zip_members=5))
    with pytest.raises(UnsupportedDocumentError, match=r"parts\.pptx: zip bomb: part .* unpacks \d+x"):
        loader_for(deck, cfg=Configuration(zip_ratio_check_min_bytes=1, max_compression_ratio=1.0))


def _ole_file(stream_name: str) -> bytes:
    """An OLE2 header and a directory entry naming ``stream_name`` (UTF-16LE, as OLE stores it)."""
    return OLE_MAGIC + bytes(504) + stream_name.encode("utf-16-le") + bytes(64)


def test_office_uploads_without_name_or_mime_type_are_told_apart_by_their_content(tmp_path):
    word = make_docx(tmp_path / "w.docx", heading="Sniffed heading")
    deck = make_pptx(tmp_path / "d.pptx", [{"title": "Sniffed slide", "body": ["Tide at noon"]}])
    for path, loader_type, expected in ((word, DocxLoader, "Sniffed heading"), (deck, PptxLoader, "Sniffed slide")):
        encoded = base64.b64encode(path.read_bytes()).decode()
        loader = loader_for_base64("upload", encoded)
        assert isinstance(loader, loader_type)
        assert expected in next(loader.lazy_load()).page_content
        parsed = Base64BlobParser().parse(Blob.from_data(encoded))  # no path, no MIME type at all
        assert expected in parsed[0].page_content and parsed[0].metadata["source"] == "upload"
    bomb = base64.b64encode(add_zip_bomb(make_docx(tmp_path / "b.docx")).read_bytes()).decode()
    with pytest.raises(UnsupportedDocumentError, match=r"upload: zip bomb"):
        loader_for_base64("upload", bomb)
    other_zip = io.BytesIO()
    with zipfile.ZipFile(other_zip, "w") as package:
        package.writestr("notes.txt", "not an Office file")
    with pytest.raises(UnsupportedDocumentError, match=r"upload: unsupported file type"):
        loader_for_base64("upload", base64.b64encode(other_zip.getvalue()).decode())


@pytest.mark.parametrize(
    ("stream", "reason"),
    [
        # Told apart by their main stream, then read by the legacy loaders: these fakes are broken.
        ("WordDocument", r"upload: (corrupt or encrypted legacy Word 97-2003 \(\.doc\) file|.* needs catdoc)"),
        ("PowerPoint Document", r"upload: corrupt or encrypted legacy PowerPoint 97-2003 \(\.ppt\) file"),
        ("EncryptedPackage", r"upload: password-protected Office file"),
        ("Unknown", r"upload: legacy Office 97-2003 file \(OLE2 container\)"),
    ],
)
def test_legacy_office_uploads_without_name_or_mime_type_are_rejected_by_their_magic(stream, reason):
    with pytest.raises(UnsupportedDocumentError, match=reason):
        loader_for_base64("upload", base64.b64encode(_ole_file(stream)).decode())
