"""Reading the text of pictures (image files, scanned PDF pages, pictures inside Word / PowerPoint /
PDF pages) with Tesseract, offline.

Tesseract is Debian's ``tesseract-ocr`` with its English model ``tesseract-ocr-eng``, installed by
scripts/setup.sh: the model is inside the Debian package, so nothing is fetched at first use, and
Tesseract runs as a separate process, so ``cfg.ocr_seconds_per_page`` is a hard limit (the process
is killed) rather than a wish.

Speed on a folder of scans comes from three choices: pages are first read with automatic page
segmentation alone (mode 3), and only a page read with low confidence (a page scanned sideways
reads as noise at a mean confidence near 40) is read again with orientation detection (mode 1),
which costs a third more on every page; a document's pictures are read by one Tesseract process per
usable CPU (``cfg.ocr_workers``), each with one thread; and each process reads a batch, so the
start (loading the language model, more than a small picture takes) is paid once per batch.

``ocr_image`` returns the text with Tesseract's mean word confidence; ``ocr_images`` reads a
document's pictures; ``OcrUnavailableError`` and ``OcrFailedError`` say why a picture could not be
read, for the loaders to report.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cache

from keel.core.machine import usable_cpus
from keel.core.settings.ingestion import IngestionSettings

logger = logging.getLogger(__name__)

TESSERACT = "tesseract"
INSTALL_HINT = "install Debian's tesseract-ocr and tesseract-ocr-eng (scripts/setup.sh does)"
# Automatic page segmentation: the first reading of every page.
_FAST_SEGMENTATION = "3"
# The same with orientation and script detection: rotated scans come out upright, at a third more time.
_UPRIGHT_SEGMENTATION = "1"
_LANGUAGE = re.compile(r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")
# One OCR process uses one core: the machine's other work (and other users' requests) keeps the rest.
_OCR_ENV = {"OMP_THREAD_LIMIT": "1"}


class OcrUnavailableError(RuntimeError):
    """Tesseract (or the language's model) is not installed: nothing could be read."""


class OcrFailedError(RuntimeError):
    """This picture could not be read: too large, too slow, or Tesseract failed on it."""


@dataclass(frozen=True)
class OcrResult:
    """A picture's text as Tesseract read it, with how sure it was."""
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


def _pages_of_tsv(tsv: str) -> dict[int, list[dict[str, str]]]:
    """Tesseract's rows by page: each picture of a batch is one page, numbered from 1."""
    pages: dict[int, list[dict[str, str]]] = {}
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        try:
            pages.setdefault(int(row["page_num"]), []).append(row)
        except (KeyError, TypeError, ValueError):
            continue
    return pages


def _text_from_rows(rows: list[dict[str, str]]) -> tuple[str, float, int]:
    """Lines of words in Tesseract's reading order (paragraphs apart), mean confidence, word count."""
    lines: dict[tuple[str, str, str, str], list[str]] = {}
    confidences: list[float] = []
    for row in rows:
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


def _text_from_tsv(tsv: str) -> tuple[str, float, int]:
    """The text of a one-picture TSV (see ``_text_from_rows``)."""
    return _text_from_rows([row for rows in _pages_of_tsv(tsv).values() for row in rows])


def _tesseract(source: str, cfg: IngestionSettings, segmentation: str, *, timeout: float,
               png: bytes | None = None) -> str:
    """Tesseract's TSV for ``source``: "stdin" (with ``png``) or a file listing one picture per line."""
    command = [TESSERACT, source, "stdout", "--psm", segmentation, "-l", cfg.ocr_language, "tsv"]
    try:
        done = subprocess.run(
            command, input=png, capture_output=True, timeout=timeout, check=False,
            env={**os.environ, **_OCR_ENV},
        )
    except subprocess.TimeoutExpired as exc:
        raise OcrFailedError(f"OCR stopped after {timeout:g} s (ocr_seconds_per_page)") from exc
    except OSError as exc:
        raise OcrUnavailableError(f"OCR is not available: {exc} ({INSTALL_HINT})") from exc
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise OcrFailedError(f"Tesseract failed (exit {done.returncode}): {detail[0]}")
    return done.stdout.decode("utf-8", "replace")


def _decoded(data: bytes, cfg: IngestionSettings) -> bytes:
    try:
        return _as_png(data, cfg)
    except OcrFailedError:
        raise
    except Exception as exc:  # Pillow raises many types on broken pictures
        raise OcrFailedError(f"picture cannot be decoded: {exc}") from exc


def _read_png(png: bytes, cfg: IngestionSettings, segmentation: str) -> OcrResult:
    started = time.perf_counter()
    tsv = _tesseract("stdin", cfg, segmentation, timeout=cfg.ocr_seconds_per_page, png=png)
    text, confidence, words = _text_from_tsv(tsv)
    return OcrResult(text=text, confidence=confidence, words=words, seconds=round(time.perf_counter() - started, 3))


def ocr_image(data: bytes, cfg: IngestionSettings | None = None) -> OcrResult:
    """The text of an encoded picture (PNG, JPEG, TIFF, ...)."""
    result = ocr_images([data], cfg)[0]
    if isinstance(result, OcrFailedError):
        raise result
    return result


def _read_batch(pngs: list[bytes], cfg: IngestionSettings, segmentation: str) -> list[OcrResult] | None:
    """All pictures read by one Tesseract process, in order; None when its output does not account
    for each picture (then each is read alone)."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="keel-ocr-") as folder:
        names = []
        for number, png in enumerate(pngs, start=1):
            name = os.path.join(folder, f"{number}.png")
            with open(name, "wb") as out:
                out.write(png)
            names.append(name)
        listing = os.path.join(folder, "pictures.txt")
        with open(listing, "w", encoding="utf-8") as out:
            out.write("\n".join(names) + "\n")
        tsv = _tesseract(listing, cfg, segmentation, timeout=cfg.ocr_seconds_per_page * len(pngs))
        pages = _pages_of_tsv(tsv)
    if set(pages) != set(range(1, len(pngs) + 1)):
        return None
    seconds = round((time.perf_counter() - started) / len(pngs), 3)
    return [OcrResult(*_text_from_rows(pages[number]), seconds=seconds) for number in range(1, len(pngs) + 1)]


Read = OcrResult | OcrFailedError


def _read_group(pngs: list[bytes], cfg: IngestionSettings, segmentation: str) -> list[Read]:
    """The pictures read by one Tesseract process; when that fails or runs out of its time (the
    pictures' ``ocr_seconds_per_page`` together), each alone, so one bad picture costs only its own
    text and its error names it."""
    if len(pngs) > 1:
        try:
            batch = _read_batch(pngs, cfg, segmentation)
        except OcrFailedError as exc:
            logger.info("OCR of %d pictures together failed (%s): each is read alone", len(pngs), exc)
            batch = None
        if batch is not None:
            return list(batch)
    results: list[Read] = []
    for png in pngs:
        try:
            results.append(_read_png(png, cfg, segmentation))
        except OcrFailedError as exc:
            results.append(exc)
    return results


def _read_all(pngs: list[bytes], cfg: IngestionSettings, segmentation: str) -> list[Read]:
    """The pictures in order, read in as many consecutive groups as there are OCR workers, at once."""
    workers = min(len(pngs), cfg.ocr_workers or usable_cpus())
    if workers <= 1:
        return _read_group(pngs, cfg, segmentation)
    groups = [pngs[len(pngs) * n // workers:len(pngs) * (n + 1) // workers] for n in range(workers)]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="keel-ocr") as pool:
        read = pool.map(lambda group: _read_group(group, cfg, segmentation), groups)
        return [result for group in read for result in group]


def _upright(pngs: list[bytes], results: list[Read], cfg: IngestionSettings) -> list[Read]:
    """Pages read with words but low confidence read again with orientation detection; the more
    confident reading is kept (a sideways scan, read upright, goes from about 40 to about 95)."""
    again = [n for n, result in enumerate(results)
             if isinstance(result, OcrResult) and result.words and result.confidence < cfg.ocr_min_confidence]
    if not again:
        return results
    kept = list(results)
    for n, second in zip(again, _read_all([pngs[n] for n in again], cfg, _UPRIGHT_SEGMENTATION), strict=True):
        first = kept[n]
        if isinstance(second, OcrResult) and isinstance(first, OcrResult) and second.confidence > first.confidence:
            kept[n] = replace(second, seconds=round(first.seconds + second.seconds, 3))
    return kept


def ocr_images(pictures: list[bytes], cfg: IngestionSettings | None = None) -> list[Read]:
    """The text of each picture, in order, or why it could not be read."""
    cfg = cfg or IngestionSettings()
    reason = ocr_available(cfg)
    if reason:
        raise OcrUnavailableError(reason)
    results: list[Read | None] = [None] * len(pictures)
    decoded: dict[int, bytes] = {}
    for position, data in enumerate(pictures):
        try:
            decoded[position] = _decoded(data, cfg)
        except OcrFailedError as exc:
            results[position] = exc
    pngs = list(decoded.values())
    read = _upright(pngs, _read_all(pngs, cfg, _FAST_SEGMENTATION), cfg) if pngs else []
    for position, result in zip(decoded, read, strict=True):
        results[position] = result
    return results  # type: ignore[return-value]  # every picture was decoded and read, or failed
