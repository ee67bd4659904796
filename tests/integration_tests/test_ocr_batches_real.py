"""Real Tesseract reading a document's pictures in one process gives each picture the same text and
confidence as reading it alone (upright, turned and blank pictures side by side; the turned one is
read again with orientation detection), and the corpus's picture-heavy PDFs come out the same
either way, in fewer Tesseract runs, and the same again read by two Tesseract processes at once."""

from __future__ import annotations

import subprocess
from io import BytesIO

import pytest
from PIL import Image, ImageDraw, ImageFont

from keel.core.configuration import Configuration
from keel.loaders import loader_for
from keel.loaders import ocr as ocr_module
from keel.loaders.ocr import ocr_available, ocr_images

pytestmark = pytest.mark.skipif(
    ocr_available() is not None, reason=f"{ocr_available()} - scripts/setup.sh installs it"
)


def _printed(lines: list[str], *, rotate: int = 0) -> bytes:
    picture = Image.new("RGB", (900, 110 * len(lines) + 40), "white")
    draw = ImageDraw.Draw(picture)
    font = ImageFont.load_default(size=44)
    for number, line in enumerate(lines):
        draw.text((30, 30 + 110 * number), line, fill="black", font=font)
    picture = picture.rotate(rotate, expand=True, fillcolor="white")
    out = BytesIO()
    picture.save(out, format="PNG")
    return out.getvalue()


def _counting_tesseract_runs(monkeypatch) -> list[list[str]]:
    runs: list[list[str]] = []
    real_run = subprocess.run

    def run(command, **kwargs):
        if command and command[0] == ocr_module.TESSERACT and "--list-langs" not in command:
            runs.append(command)
        return real_run(command, **kwargs)

    monkeypatch.setattr(ocr_module.subprocess, "run", run)
    return runs


def test_one_tesseract_run_reads_each_picture_as_it_reads_it_alone(monkeypatch):
    pictures = [
        _printed(["Claims are paid", "within ten days"]),
        _printed(["Sideways scan of", "the renewal form", "and the claims are", "paid within ten days"], rotate=90),
        _printed([]),  # a blank picture: no words, and it must not shift the others
        _printed(["Call the help desk", "before noon"]),
    ]
    cfg = Configuration(ocr_workers=1)
    runs = _counting_tesseract_runs(monkeypatch)
    together = ocr_images(pictures, cfg)
    # One run for the four, then the sideways one (read as low-confidence noise) again, upright.
    assert [command[command.index("--psm") + 1] for command in runs] == ["3", "1"]
    assert "renewal form" in together[1].text and together[1].confidence >= cfg.ocr_min_confidence
    alone = [ocr_module.ocr_image(picture, cfg) for picture in pictures]
    assert [(r.text, r.confidence, r.words) for r in together] == [(r.text, r.confidence, r.words) for r in alone]
    assert together[0].text.split() == ["Claims", "are", "paid", "within", "ten", "days"]
    assert together[2].words == 0 and "help desk" in together[3].text


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["unstructured-example-docs/reliance.pdf",
                                  "pypdf-sample-files/009-pdflatex-geotopo/GeoTopo-komprimiert.pdf"])
def test_a_picture_heavy_pdf_reads_the_same_in_batches_in_fewer_runs(shared_data, monkeypatch, name):
    path = shared_data / "docs" / name
    if not path.exists():
        pytest.skip(f"{path} is not in ../shared/data")
    runs = _counting_tesseract_runs(monkeypatch)

    def read(batch: int, workers: int = 1):
        runs.clear()
        loader = loader_for(path, cfg=Configuration(ocr_batch_pictures=batch, ocr_workers=workers))
        documents = [(doc.page_content, doc.metadata) for doc in loader.lazy_load()]
        return documents, loader.warnings, len(runs)

    batched, batched_warnings, batched_runs = read(Configuration().ocr_batch_pictures)
    alone, alone_warnings, alone_runs = read(1)
    assert any(meta.get("ocr") for _, meta in alone) and alone_runs >= 5  # many pictures, some with text
    assert batched == alone and batched_warnings == alone_warnings
    assert batched_runs < alone_runs / 3
    in_parallel, parallel_warnings, _ = read(Configuration().ocr_batch_pictures, workers=2)
    assert in_parallel == batched and parallel_warnings == batched_warnings
