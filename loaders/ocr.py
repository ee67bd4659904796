"""Reading the text of pictures (image files, scanned PDF pages, pictures inside Word / PowerPoint /
PDF pages) with Tesseract, offline.

Tesseract is Debian's ``tesseract-ocr`` with its English model ``tesseract-ocr-eng``, installed by
scripts/setup.sh: the model is inside the Debian package, so nothing is fetched at first use, and
Tesseract runs as a separate process, so ``cfg.ocr_seconds_per_page`` is a hard limit (the process
is killed) rather than a wish. It runs with page segmentation mode 1 (automatic, with orientation
detection), so a page scanned sideways is read the right way up.

``ocr_image`` returns the text with Tesseract's mean word confidence; ``OcrUnavailableError`` and
``OcrFailedError`` say why a picture could not be read, for the loaders to report.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from functools import cache

from keel.core.settings.ingestion import IngestionSettings

TESSERACT = "tesseract"
INSTALL_HINT = "install Debian's tesseract-ocr and tesseract-ocr-eng (scripts/setup.sh does)"
# Automatic page segmentation with orientation and script detection: rotated scans come out upright.
_PAGE_SEGMENTATION = "1"
_LANGUAGE = re.compile(r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")
# One OCR process uses one core: the machine's other work (and other users' requests) keeps the rest.
_OCR_ENV = {"OMP_THREAD_LIMIT": "1"}


class OcrUnavailableError(RuntimeError):
    """Tesseract (or the language's model) is not installed: nothing could be read."""


class OcrFailedError(RuntimeError):
    """This picture could not be read: too large, too slow, or Tesseract failed on it."""


@dataclass(frozen=True)
class OcrResult:
    text: str
    confidence: float  # mean word confidence, 0-100; 0 when no word was found
    words: int
    seconds: float


@cache
def _installed_languages(binary: str) -> frozenset[str]:
    try:
        listed = subprocess.run([binary, "--list-langs"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(line.strip() for line in listed.stdout.splitlines()[1:] if line.strip())


def ocr_available(cfg: IngestionSettings | None = None) -> str | None:
    """None when OCR can run with ``cfg``'s language, else the reason it cannot."""
    cfg = cfg or IngestionSettings()
    binary = shutil.which(TESSERACT)
    if binary is None:
        return f"OCR is not available: Tesseract is not installed ({INSTALL_HINT})"
    if not _LANGUAGE.match(cfg.ocr_language):
        return f"OCR is not available: ocr_language {cfg.ocr_language!r} is not a Tesseract language name"
    missing = [lang for lang in cfg.ocr_language.split("+") if lang not in _installed_languages(binary)]
    if missing:
        return (f"OCR is not available: Tesseract has no model for {', '.join(missing)} "
                f"(install tesseract-ocr-{missing[0]})")
    return None


def _as_png(data: bytes, cfg: IngestionSettings) -> bytes:
    """The picture as an 8-bit PNG Tesseract reads whatever it was: CMYK, 16-bit, palette, alpha,
    1-bit fax images."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        if image.width * image.height > cfg.ocr_max_image_pixels:
            raise OcrFailedError(
                f"picture too large for OCR: {image.width}x{image.height} pixels (limit {cfg.ocr_max_image_pixels})"
            )
        if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
            rgba = image.convert("RGBA")
            flat = Image.new("RGB", rgba.size, "white")  # transparent means paper, not black
            flat.paste(rgba, mask=rgba.getchannel("A"))
            image = flat
        elif image.mode not in ("L", "RGB", "1"):
            image = image.convert("RGB")
        out = io.BytesIO()
        image.save(out, format="PNG")
        return out.getvalue()


def _text_from_tsv(tsv: str) -> tuple[str, float, int]:
    """Lines of words in Tesseract's reading order (paragraphs apart), mean confidence, word count."""
    lines: dict[tuple[str, str, str, str], list[str]] = {}
    confidences: list[float] = []
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        word = (row.get("text") or "").strip()
        try:
            confidence = float(row.get("conf") or -1)
        except ValueError:
            continue
        if not word or confidence < 0:
            continue
        key = (row["page_num"], row["block_num"], row["par_num"], row["line_num"])
        lines.setdefault(key, []).append(word)
        confidences.append(confidence)
    out: list[str] = []
    previous_paragraph = None
    for (page, block, paragraph, _), words in lines.items():
        if previous_paragraph is not None and (page, block, paragraph) != previous_paragraph:
            out.append("")
        previous_paragraph = (page, block, paragraph)
        out.append(" ".join(words))
    mean = sum(confidences) / len(confidences) if confidences else 0.0
    return "\n".join(out).strip(), round(mean, 1), len(confidences)


def ocr_image(data: bytes, cfg: IngestionSettings | None = None) -> OcrResult:
    """The text of an encoded picture (PNG, JPEG, TIFF, ...)."""
    cfg = cfg or IngestionSettings()
    reason = ocr_available(cfg)
    if reason:
        raise OcrUnavailableError(reason)
    try:
        png = _as_png(data, cfg)
    except OcrFailedError:
        raise
    except Exception as exc:  # Pillow raises many types on broken pictures
        raise OcrFailedError(f"picture cannot be decoded: {exc}") from exc
    started = time.perf_counter()
    command = [TESSERACT, "stdin", "stdout", "--psm", _PAGE_SEGMENTATION, "-l", cfg.ocr_language, "tsv"]
    try:
        done = subprocess.run(
            command, input=png, capture_output=True, timeout=cfg.ocr_seconds_per_page, check=False,
            env={**os.environ, **_OCR_ENV},
        )
    except subprocess.TimeoutExpired as exc:
        raise OcrFailedError(f"OCR stopped after {cfg.ocr_seconds_per_page:g} s (ocr_seconds_per_page)") from exc
    except OSError as exc:
        raise OcrUnavailableError(f"OCR is not available: {exc} ({INSTALL_HINT})") from exc
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise OcrFailedError(f"Tesseract failed (exit {done.returncode}): {detail[0]}")
    text, confidence, words = _text_from_tsv(done.stdout.decode("utf-8", "replace"))
    return OcrResult(text=text, confidence=confidence, words=words, seconds=round(time.perf_counter() - started, 3))
