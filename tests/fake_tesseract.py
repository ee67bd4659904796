"""A stand-in for the Tesseract process, for OCR tests that must not depend on its reading: it
answers each picture (one on stdin, or a batch listed in a file) with the words a test chose, as
Tesseract's TSV, and records each run."""

from __future__ import annotations

import io
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

from PIL import Image

from keel.loaders import ocr as ocr_module

TSV_HEADER = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"


def tsv(*words: tuple[int, int, int, float, str], page: int = 1) -> str:
    """Rows of (block, paragraph, line, confidence, word) of one picture, page ``page`` of a batch."""
    rows = [f"5\t{page}\t{b}\t{p}\t{ln}\t1\t0\t0\t1\t1\t{c}\t{w}\n" for b, p, ln, c, w in words]
    return TSV_HEADER + f"1\t{page}\t0\t0\t0\t0\t0\t0\t9\t9\t-1\t\n" + "".join(rows)


@dataclass
class FakeTesseract:
    """``words(picture)``: what the picture says; ``fails(picture)``: Tesseract exits 1 on it;
    ``confidence_of(picture, segmentation)``, when given, how sure it is in that page segmentation mode."""

    confidence: float = 90.0
    confidence_of: Callable[[Image.Image, str], float] | None = None
    words: Callable[[Image.Image], str] = lambda picture: "Opening hours"
    fails: Callable[[Image.Image], bool] = lambda picture: False
    runs: list[list[Image.Image]] = field(default_factory=list)  # the pictures of each run
    timeouts: list[float] = field(default_factory=list)
    modes_seen: list[str] = field(default_factory=list)  # each picture's colour mode, as given
    segmentations: list[str] = field(default_factory=list)  # each run's --psm

    def __call__(self, command, *, input, timeout, **kwargs):
        if input is not None:  # one picture on stdin
            data = [input]
        else:  # a batch: a file listing one picture per line
            with open(command[1], encoding="utf-8") as listing:
                data = [_read(name) for name in listing.read().split()]
        pictures = [Image.open(io.BytesIO(picture)) for picture in data]
        self.runs.append(pictures)
        self.modes_seen.extend(picture.mode for picture in pictures)
        self.timeouts.append(timeout)
        segmentation = command[command.index("--psm") + 1]
        self.segmentations.append(segmentation)
        if any(self.fails(picture) for picture in pictures):
            return subprocess.CompletedProcess(command, 1, b"", b"Error during processing.")
        out = TSV_HEADER
        for number, picture in enumerate(pictures, start=1):
            sure = self.confidence_of(picture, segmentation) if self.confidence_of else self.confidence
            rows = [(1, 1, 1, sure, word) for word in self.words(picture).split()]
            out += tsv(*rows, page=number).removeprefix(TSV_HEADER)
        return subprocess.CompletedProcess(command, 0, out.encode(), b"")


def _read(name: str) -> bytes:
    with open(name, "rb") as picture:
        return picture.read()


def fake_tesseract(monkeypatch, **behaviour) -> FakeTesseract:
    """Tesseract replaced by a ``FakeTesseract`` (and taken as installed) for this test."""
    fake = FakeTesseract(**behaviour)
    monkeypatch.setattr(ocr_module, "ocr_available", lambda cfg=None: None)
    monkeypatch.setattr(ocr_module.subprocess, "run", fake)
    return fake
