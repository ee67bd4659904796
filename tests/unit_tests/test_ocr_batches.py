"""A document's pictures are read by OCR in batches, one Tesseract process each, and come back in
their places among the pages: what a reader of the document sees is the same as one picture at a
time, only faster. A batch Tesseract fails on is read again picture by picture, so one bad picture
costs only its own text."""

from __future__ import annotations

import io

from langchain_core.documents import Document
from PIL import Image

from keel.core.configuration import Configuration
from keel.loaders import loader_for
from keel.loaders.image import ImageLoader
from keel.loaders.picture_text import Picture, PictureText
from tests.fake_tesseract import fake_tesseract

# Tesseract's answer is the picture's width, so each text says which picture it came from.
by_width = {"words": lambda picture: f"picture {picture.width}"}


def _picture(width: int) -> bytes:
    out = io.BytesIO()
    Image.new("L", (width, 60), 255).save(out, format="PNG")
    return out.getvalue()


def _reader(tmp_path, **settings) -> PictureText:
    """One OCR worker unless told: the batches below are one Tesseract run each."""
    (tmp_path / "scan.png").write_bytes(_picture(100))
    return PictureText(ImageLoader(tmp_path / "scan.png", cfg=Configuration(**{"ocr_workers": 1, **settings})))


def _page(number: int) -> Document:
    return Document(page_content=f"text of page {number}", metadata={"page": number})


def _parts(log: list[str]):
    """Page 1, its two pictures, page 2, its picture, page 3; ``log`` records what was handed over."""
    for part in (_page(1), Picture(_picture(101), 1, 3, 1), Picture(_picture(102), 1, 3, 2), _page(2),
                 Picture(_picture(103), 2, 3, 3), _page(3)):
        log.append(part.page_content if isinstance(part, Document) else f"picture {part.image_index}")
        yield part


def test_pictures_come_back_as_text_in_their_places_with_one_tesseract_run(tmp_path, monkeypatch):
    tesseract = fake_tesseract(monkeypatch, **by_width)
    reader = _reader(tmp_path)
    out = list(reader.in_reading_order(_parts([])))
    assert [doc.page_content for doc in out] == [
        "text of page 1", "picture 101", "picture 102", "text of page 2", "picture 103", "text of page 3",
    ]
    assert [(doc.metadata["page"], doc.metadata.get("image_index")) for doc in out[1:3]] == [(1, 1), (1, 2)]
    assert out[4].metadata["ocr"] is True and out[4].metadata["page"] == 2
    assert [len(run) for run in tesseract.runs] == [3]
    assert tesseract.timeouts == [3 * Configuration().ocr_seconds_per_page]  # the pictures' limits together


def test_batches_hold_back_at_most_their_size_and_keep_the_order(tmp_path, monkeypatch):
    tesseract = fake_tesseract(monkeypatch, **by_width)
    reader = _reader(tmp_path, ocr_batch_pictures=2)
    log: list[str] = []
    out = []
    for doc in reader.in_reading_order(_parts(log)):
        out.append((doc.page_content, len(log)))
    assert out == [
        ("text of page 1", 1),  # nothing waits for it: handed on before any picture is read
        ("picture 101", 3), ("picture 102", 3),  # a full batch is read at once
        ("text of page 2", 4),  # nothing waits once the batch is read
        ("picture 103", 6), ("text of page 3", 6),  # the last, short batch: read when the document ends
    ]
    assert [len(run) for run in tesseract.runs] == [2, 1]


def test_pages_waiting_for_a_picture_are_bounded_too(tmp_path, monkeypatch):
    fake_tesseract(monkeypatch, **by_width)
    reader = _reader(tmp_path, ocr_batch_pictures=2)
    log: list[str] = []

    def parts():
        for part in (Picture(_picture(101), 1, 9, 1), *[_page(n) for n in range(1, 9)]):
            log.append("part")
            yield part

    handed_over = [(doc.page_content, len(log)) for doc in reader.in_reading_order(parts())]
    assert handed_over[:3] == [("picture 101", 3), ("text of page 1", 3), ("text of page 2", 3)]
    assert handed_over[3] == ("text of page 3", 4)  # after the batch, pages pass straight through


def test_a_batch_tesseract_fails_on_is_read_again_one_picture_at_a_time(tmp_path, monkeypatch):
    tesseract = fake_tesseract(monkeypatch, fails=lambda picture: picture.width == 102, **by_width)
    reader = _reader(tmp_path)
    out = list(reader.in_reading_order(_parts([])))
    assert [doc.page_content for doc in out] == [
        "text of page 1", "picture 101", "text of page 2", "picture 103", "text of page 3",
    ]
    assert [len(run) for run in tesseract.runs] == [3, 1, 1, 1]
    assert reader.loader.warnings == [
        "page 1: picture 2 not read by OCR: Tesseract failed (exit 1): Error during processing."
    ]


def test_a_picture_that_cannot_be_decoded_fails_alone(tmp_path, monkeypatch):
    tesseract = fake_tesseract(monkeypatch, **by_width)
    reader = _reader(tmp_path)
    parts = [Picture(_picture(101), 1, 1, 1), Picture(b"not a picture", 1, 1, 2), Picture(_picture(103), 1, 1, 3)]
    out = list(reader.in_reading_order(parts))
    assert [doc.page_content for doc in out] == ["picture 101", "picture 103"]
    assert [len(run) for run in tesseract.runs] == [2]
    assert len(reader.loader.warnings) == 1
    assert reader.loader.warnings[0].startswith("page 1: picture 2 not read by OCR: picture cannot be decoded")


def test_the_ocr_page_limit_counts_pictures_across_batches(tmp_path, monkeypatch):
    tesseract = fake_tesseract(monkeypatch, **by_width)
    reader = _reader(tmp_path, ocr_batch_pictures=2, ocr_max_pages=3)
    parts = [Picture(_picture(100 + n), 1, 1, n) for n in range(1, 6)]
    out = list(reader.in_reading_order(parts))
    assert [doc.page_content for doc in out] == ["picture 101", "picture 102", "picture 103"]
    assert [len(run) for run in tesseract.runs] == [2, 1]
    assert reader.loader.warnings == ["OCR read the first 3 pictures only (ocr_max_pages); 2 more were not read"]


def test_a_word_file_gives_the_same_documents_in_batches_as_one_picture_at_a_time(tmp_path, monkeypatch):
    from docx import Document as WordDocument
    from docx.shared import Inches

    word = WordDocument()
    for number in range(1, 4):
        word.add_paragraph(f"Paragraph {number} before its picture.")
        path = tmp_path / f"figure{number}.png"
        Image.new("RGB", (120 + number, 90), (30, 120, 200)).save(path)
        word.add_picture(str(path), width=Inches(1))
    word.add_paragraph("The closing paragraph.")
    word.save(tmp_path / "guide.docx")

    def read(batch: int) -> tuple[list[tuple[str, dict]], int]:
        tesseract = fake_tesseract(monkeypatch, **by_width)
        loader = loader_for(tmp_path / "guide.docx", cfg=Configuration(ocr_batch_pictures=batch, ocr_workers=1))
        return [(doc.page_content, doc.metadata) for doc in loader.lazy_load()], len(tesseract.runs)

    batched, batched_runs = read(16)
    alone, alone_runs = read(1)
    assert batched == alone and (batched_runs, alone_runs) == (1, 3)
    ocr = [content for content, meta in batched if meta.get("ocr")]
    assert ocr == ["picture 121", "picture 122", "picture 123"]


def test_several_workers_read_consecutive_groups_at_once_and_keep_the_order(tmp_path, monkeypatch):
    tesseract = fake_tesseract(monkeypatch, **by_width)
    reader = _reader(tmp_path, ocr_workers=2)
    parts = [Picture(_picture(100 + n), 1, 1, n) for n in range(1, 6)]
    out = list(reader.in_reading_order(parts))
    assert [doc.page_content for doc in out] == [f"picture {100 + n}" for n in range(1, 6)]
    assert sorted([picture.width for picture in run] for run in tesseract.runs) == [[101, 102], [103, 104, 105]]


def test_a_page_read_with_low_confidence_is_read_again_upright_and_the_surer_reading_kept(tmp_path, monkeypatch):
    """Pages are read without orientation detection first; a sideways scan reads as low-confidence
    noise and is read again with it (page segmentation mode 1)."""
    sideways = {102}

    def confidence_of(picture, segmentation):
        return 40.0 if picture.width in sideways and segmentation == "3" else 95.0

    tesseract = fake_tesseract(monkeypatch, confidence_of=confidence_of, **by_width)
    reader = _reader(tmp_path)
    parts = [Picture(_picture(100 + n), 1, 1, n) for n in range(1, 4)]
    out = list(reader.in_reading_order(parts))
    assert [doc.metadata["ocr_confidence"] for doc in out] == [95.0, 95.0, 95.0]
    assert tesseract.segmentations == ["3", "1"]
    assert [[picture.width for picture in run] for run in tesseract.runs] == [[101, 102, 103], [102]]
    assert reader.loader.warnings == []


def test_a_second_reading_less_sure_than_the_first_is_dropped(tmp_path, monkeypatch):
    tesseract = fake_tesseract(monkeypatch, confidence_of=lambda picture, segmentation: 50.0 if segmentation == "3"
                               else 30.0, **by_width)
    reader = _reader(tmp_path)
    out = list(reader.in_reading_order([Picture(_picture(101), 1, 1, 1)]))
    assert tesseract.segmentations == ["3", "1"]
    assert [doc.metadata["ocr_confidence"] for doc in out] == [50.0]
    assert [warning.split(":")[1].strip() for warning in reader.loader.warnings] == ["low OCR confidence 50 (below 60) on picture 1"]
