"""The real-world corpus in ../shared/data/docs (files nobody wrote for Keel): every file either
loads with text (where it has text) or is rejected with a reason that names the file and says why;
known texts come back as published; the pipeline ingests the whole folder into real Redis Stack."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from keel.core.configuration import Configuration
from keel.loaders import DocumentLoadError, loader_for
from keel.loaders.pipeline import expand_paths, ingest

pytestmark = pytest.mark.shared_data
# What a rejection may say: each names a cause the user can act on.
CLEAR_REASONS = re.compile(
    r"password is required|legacy .*(Word|PowerPoint)|corrupt|truncated|no extractable text|unsupported file type"
)
EXPECTED_TEXT = ("pypdf-resources/crazyones", "pypdf-resources/jpeg")


@pytest.fixture
def docs(shared_data) -> Path:
    return shared_data / "docs"


def _documents(docs: Path) -> list[Path]:
    """The documents of the corpus: everything but the expected-text files and the index."""
    skip = {docs / f"{stem}.txt" for stem in EXPECTED_TEXT} | {docs / "pypdf-sample-files" / "files.json"}
    return [path for path in expand_paths([docs]) if path not in skip]


def _normalised(text: str) -> str:
    return " ".join(text.split())


def _load(path: Path, **kwargs):
    """(text, images) of a file, or the DocumentLoadError that rejected it."""
    try:
        pages = list(loader_for(path, **kwargs).lazy_load())
    except DocumentLoadError as exc:
        return exc
    text = "\n".join(p.page_content for p in pages if p.metadata["multimodal_type"] == "text")
    return text, [p for p in pages if p.metadata["multimodal_type"] == "image"]


def test_every_file_loads_or_is_rejected_with_a_clear_reason(docs):
    files = _documents(docs)
    assert len(files) >= 60
    loaded, rejected = {}, {}
    for path in files:
        result = _load(path)
        if isinstance(result, DocumentLoadError):
            assert result.source == path.name and str(result).startswith(f"{path.name}: ")
            assert CLEAR_REASONS.search(result.reason), f"unclear reason for {path.name}: {result.reason}"
            rejected[path] = result.reason
        else:
            loaded[path] = result
    for path in files:  # legacy Word / PowerPoint files are read (catdoc; the .ppt records)
        if path.suffix in (".doc", ".ppt"):
            assert path in loaded and loaded[path][0].strip(), f"{path.name}: {rejected.get(path)}"
    with_text = [path for path, (text, _) in loaded.items() if text.strip()]
    assert len(with_text) >= 0.75 * len(files), f"only {len(with_text)} of {len(files)} files gave text"
    kinds = {path.suffix for path in with_text}
    assert {".pdf", ".docx", ".pptx"} <= kinds


def test_pdf_page_counts_and_encryption_match_the_published_index(docs):
    index = json.loads((docs / "pypdf-sample-files" / "files.json").read_text())["data"]
    checked = 0
    for entry in index:
        path = docs / "pypdf-sample-files" / entry["path"]
        if not path.is_file():
            continue
        text_only = Configuration(extract_images=False, ocr_enabled=False)
        result = _load(path, cfg=text_only)
        if entry["encrypted"]:
            assert isinstance(result, DocumentLoadError) and "password is required" in result.reason
            continue
        if isinstance(result, DocumentLoadError):
            assert "corrupt" in result.reason, f"{path.name}: {result.reason}"
            continue
        loader = loader_for(path, cfg=text_only)
        pages = list(loader.lazy_load())
        if any("damaged page tree" in warning for warning in loader.warnings):  # rebuilt from what is left
            assert 0 < pages[0].metadata["total_pages"] <= entry["pages"]
            continue
        assert {p.metadata["total_pages"] for p in pages} == {entry["pages"]}
        assert [p.metadata["page"] for p in pages] == list(range(1, entry["pages"] + 1))
        checked += 1
    assert checked >= 20


def test_crazyones_gives_its_published_text(docs):
    expected = (docs / "pypdf-resources" / "crazyones.txt").read_text(encoding="utf-8")
    text, _ = _load(docs / "pypdf-resources" / "crazyones.pdf")
    assert _normalised(text) == _normalised(expected)


def test_jpeg_pdf_gives_its_text_and_its_published_jpeg_byte_for_byte(docs):
    """jpeg.txt is the hex of the JPEG embedded in jpeg.pdf: the image must come back unchanged."""
    expected = bytes.fromhex(_normalised((docs / "pypdf-resources" / "jpeg.txt").read_text()).replace(" ", ""))
    text, images = _load(docs / "pypdf-resources" / "jpeg.pdf")
    assert _normalised(text) == "A PDF with a JPEG image."
    (image,) = images
    assert base64.b64decode(image.page_content) == expected
    assert image.metadata["mime_type"] == "image/jpeg"


def test_images_come_out_of_real_pdfs_and_word_files_with_their_shape(docs):
    _, pdf_images = _load(docs / "pypdf-resources" / "jpeg.pdf")
    (image,) = pdf_images
    assert (image.metadata["width"], image.metadata["height"], image.metadata["channels"]) == (800, 600, 3)
    _, docx_images = _load(docs / "python-docx" / "having-images.docx")
    assert len(docx_images) >= 3
    for image in docx_images:
        meta = image.metadata
        assert meta["width"] >= 32 and meta["height"] >= 32 and meta["channels"] in (1, 2, 3, 4)
        assert meta["mime_type"].startswith("image/") and len(image.page_content) > 100


def test_encrypted_real_pdfs_open_with_their_password(docs):
    text, _ = _load(docs / "pypdf-resources" / "encrypted-file.pdf", password="test")
    assert text.strip()
    wrong = _load(docs / "pypdf-resources" / "encrypted-file.pdf", password="not-it")
    assert isinstance(wrong, DocumentLoadError) and "password is wrong" in wrong.reason


@pytest.mark.real
def test_the_pipeline_ingests_the_whole_corpus_into_redis(docs, make_store, unique_user):
    from keel.retrievers.parent_document import KeelParentRetriever

    store = make_store()
    files = _documents(docs)
    report = ingest(files, store, store.cfg, user_id=unique_user)
    assert report.documents + len(report.errors) == len(files)
    assert report.documents >= 0.75 * len(files) and report.children > report.parents > 0
    errors = {Path(error["source"]).name: error["error"] for error in report.errors}
    for name, reason in errors.items():
        assert CLEAR_REASONS.search(reason), (name, reason)
    for path in files:  # a file with neither text nor pictures is rejected, never stored empty
        result = _load(path, cfg=Configuration(ocr_enabled=False))  # OCR adds text only where pictures are
        if not isinstance(result, DocumentLoadError) and not result[0].strip() and not result[1]:
            assert "no extractable text" in errors[path.name], path.name
    stored = {doc["source"] for doc in store.list_documents(unique_user)}
    assert {"crazyones.pdf", "handbook-1p.docx", "sample-presentation.pptx"} <= stored
    top = KeelParentRetriever(store=store, user_id=unique_user).invoke("Here's to the crazy ones, the misfits")
    assert top[0].metadata["source"] in {"crazyones.pdf", "crazyones-pdfa.pdf"}
