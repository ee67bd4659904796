"""Benchmark: how fast and how accurately Keel's OCR reads pages, on real documents whose text is known.

Known text: ``crazyones.pdf`` ships its expected text (pypdf's test resources, ``crazyones.txt``);
the other born-digital PDFs of the corpus carry a text layer that serves as the reference. Each
page is rendered to a picture with poppler's ``pdftoppm`` (as a scanner would make it, at
``--dpi``), read as ``keel ingest`` reads a folder (files in parallel, largest first, each
document's pictures through ``keel.loaders.ocr.ocr_images`` with its share of the usable CPUs, the
ingestion defaults), and compared with the reference: character
error rate = Levenshtein edits / reference characters, after Unicode NFKC and whitespace
normalisation. Reading order counts in the CER (a paragraph Tesseract puts elsewhere is many
edits), so the words found regardless of order are reported beside it (word recall: reference
words, as a multiset, that the OCR text holds), and multi-column pages apart. The corpus's real
scans (no reference) are timed as well.

Baselines in the same run: the same folder read on one CPU (what the parallel reading gains), and
pypdf's text-layer extraction of the same pages (what a born-digital page costs); the ratio says
what a scan costs more. Pages per second are pages over the folder's wall time.

    .venv/bin/python -m bench.ocr_speed [--dpi 200] [--max-pages 2] [--json]

About a minute at the defaults (the folder is read twice); run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import subprocess
import tempfile
import time
import unicodedata
from pathlib import Path

from bench.corpus import shared_data

# (path under docs/, expected-text file or None for the text layer, multi-column)
KNOWN_TEXT = (
    ("pypdf-resources/crazyones.pdf", "pypdf-resources/crazyones.txt", False),
    ("pypdf-sample-files/021-pdfa/crazyones-pdfa.pdf", "pypdf-resources/crazyones.txt", False),
    ("pypdf-sample-files/001-trivial/minimal-document.pdf", None, False),
    ("pypdf-sample-files/002-trivial-libre-office-writer/002-trivial-libre-office-writer.pdf", None, False),
    ("pypdf-sample-files/004-pdflatex-4-pages/pdflatex-4-pages.pdf", None, False),
    ("pypdf-sample-files/011-google-doc-document/google-doc-document.pdf", None, False),
    ("unstructured-example-docs/fake-memo.pdf", None, False),
    ("unstructured-example-docs/layout-parser-paper-fast.pdf", None, True),
    ("unstructured-example-docs/multi-column-2p.pdf", None, True),
)
SCANS = ("unstructured-example-docs/single_table.pdf", "unstructured-example-docs/pdf-with-ocr-text.pdf")


def normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance, one numpy row at a time (insertions resolved by a running minimum)."""
    import numpy as np

    if not a or not b:
        return max(len(a), len(b))
    b_codes = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    steps = np.arange(len(b) + 1)
    previous = steps.copy()
    for i, char in enumerate(a, start=1):
        cost = (b_codes != ord(char)).astype(np.int64)
        row = np.empty_like(previous)
        row[0] = i
        row[1:] = np.minimum(previous[1:] + 1, previous[:-1] + cost)
        previous = np.minimum.accumulate(row - steps) + steps
    return int(previous[-1])


def word_recall(ocr: str, reference: str) -> float:
    """Share of the reference's words (as a multiset) that the OCR text holds, in any order."""
    from collections import Counter

    wanted, found = Counter(reference.split()), Counter(ocr.split())
    return sum((wanted & found).values()) / max(1, sum(wanted.values()))


def render(pdf: Path, page: int, dpi: int, folder: Path) -> bytes:
    stem = folder / f"page{page}"
    subprocess.run(["pdftoppm", "-r", str(dpi), "-f", str(page), "-l", str(page), "-png", "-singlefile",
                    str(pdf), str(stem)], check=True, capture_output=True)
    return stem.with_suffix(".png").read_bytes()


def _pages(docs: Path, dpi: int, max_pages: int, folder: Path) -> tuple[list[dict], list[float]]:
    """Each file's pictures as ingestion gets them, with their references, and the text layer's time
    per page (the baseline)."""
    from pypdf import PdfReader

    files, layer_seconds = [], []
    for name, expected, multi_column in KNOWN_TEXT:
        pdf = docs / name
        reader = PdfReader(pdf)
        pages = []
        for number in range(1, min(len(reader.pages), max_pages) + 1):
            started = time.perf_counter()
            layer = reader.pages[number - 1].extract_text() or ""
            layer_seconds.append(time.perf_counter() - started)
            reference = normalise((docs / expected).read_text(encoding="utf-8") if expected else layer)
            if reference:
                pages.append({"page": number, "picture": render(pdf, number, dpi, folder), "reference": reference})
        files.append({"file": Path(name).name, "multi_column": multi_column, "expected_text": bool(expected),
                      "pages": pages})
    for name in SCANS:  # real scans: the pictures as embedded, read as ingestion reads them
        reader = PdfReader(docs / name)
        pages = [{"page": number, "picture": image.data, "reference": None}
                 for number, page in enumerate(reader.pages[:max_pages], start=1) for image in page.images]
        files.append({"file": Path(name).name, "multi_column": False, "expected_text": False, "pages": pages})
    return files, layer_seconds


def _read_files(files: list[dict], cfg, cpus: int) -> tuple[list[list], float]:
    """The folder read as ``keel ingest`` reads it on ``cpus`` CPUs: files in parallel, the largest
    first, each document's pictures through ``ocr_images`` with its share of the CPUs; the wall time."""
    import dataclasses
    from concurrent.futures import ThreadPoolExecutor

    from keel.loaders.ocr import ocr_images

    readers = min(cpus, len(files))
    share = dataclasses.replace(cfg, ocr_workers=max(1, cpus // readers))
    largest_first = sorted(range(len(files)), key=lambda n: -len(files[n]["pages"]))
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=readers) as pool:
        read = dict(zip(largest_first, pool.map(
            lambda n: ocr_images([page["picture"] for page in files[n]["pages"]], share), largest_first)))
    return [read[n] for n in range(len(files))], time.perf_counter() - started


def run(dpi: int, max_pages: int) -> dict:
    from keel.core.configuration import Configuration
    from keel.core.machine import usable_cpus
    from keel.loaders.ocr import OcrResult, ocr_available

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    cfg = Configuration()
    if reason := ocr_available(cfg):
        raise SystemExit(reason)
    if shutil.which("pdftoppm") is None:
        raise SystemExit("pdftoppm is not installed (Debian's poppler-utils; scripts/setup.sh installs it)")
    with tempfile.TemporaryDirectory(prefix="keel-ocr-bench-") as tmp:
        files, layer_seconds = _pages(shared_data() / "docs", dpi, max_pages, Path(tmp))
    cpus = usable_cpus()
    _, one_cpu_seconds = _read_files(files, cfg, 1)
    results, seconds = _read_files(files, cfg, cpus)
    rows, scans = [], []
    for entry, read in zip(files, results, strict=True):
        for page, result in zip(entry["pages"], read, strict=True):
            if not isinstance(result, OcrResult):
                raise SystemExit(f"{entry['file']} page {page['page']} not read: {result}")
            text, reference = normalise(result.text), page["reference"]
            if reference is None:
                scans.append({"file": entry["file"], "page": page["page"], "seconds": result.seconds,
                              "confidence": result.confidence, "words": result.words})
                continue
            errors = edit_distance(text, reference)
            rows.append({"file": entry["file"], "page": page["page"], "reference_chars": len(reference),
                         "edits": errors, "cer": round(errors / len(reference), 4),
                         "word_recall": round(word_recall(text, reference), 4),
                         "confidence": result.confidence, "seconds": result.seconds,
                         "multi_column": entry["multi_column"], "expected_text": entry["expected_text"]})

    def cer(selected: list[dict]) -> float | None:
        chars = sum(r["reference_chars"] for r in selected)
        return round(sum(r["edits"] for r in selected) / chars, 4) if chars else None

    pages = sum(len(entry["pages"]) for entry in files)
    ocr_rate = pages / seconds
    layer_rate = len(layer_seconds) / sum(layer_seconds)
    return {
        "dpi": dpi,
        "files": len(files),
        "pages_ocr": pages,
        "cpus": cpus,
        "ocr_pages_per_second": round(ocr_rate, 3),
        "one_cpu_pages_per_second": round(pages / one_cpu_seconds, 3),
        "ocr_seconds_per_page": {"mean": round(seconds / pages, 2),
                                 "max": round(max(r["seconds"] for r in rows + scans), 2)},
        "baseline_text_layer_pages_per_second": round(layer_rate, 1),
        "ocr_cost_vs_text_layer": round(layer_rate / ocr_rate, 1),
        "cer_expected_text": cer([r for r in rows if r["expected_text"]]),
        "cer_single_column": cer([r for r in rows if not r["multi_column"]]),
        "cer_multi_column": cer([r for r in rows if r["multi_column"]]),
        "word_recall_all": round(statistics.fmean(r["word_recall"] for r in rows), 4),
        "pages": rows,
        "scans": scans,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dpi", type=int, default=200, help="resolution the pages are rendered at")
    parser.add_argument("--max-pages", type=int, default=2, help="pages read per file at most")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    result = run(args.dpi, args.max_pages)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for row in result["pages"]:
        print(f"  {row['file']} p{row['page']}: CER {row['cer']:.3f} ({row['edits']}/{row['reference_chars']}), "
              f"word recall {row['word_recall']:.3f}, "
              f"confidence {row['confidence']}, {row['seconds']} s{' (multi-column)' if row['multi_column'] else ''}")
    for row in result["scans"]:
        print(f"  scan {row['file']} p{row['page']}: {row['words']} words, confidence {row['confidence']}, "
              f"{row['seconds']} s")
    print(f"OCR at {result['dpi']} dpi: {result['ocr_pages_per_second']} pages/s over {result['pages_ocr']} pages "
          f"of {result['files']} files on {result['cpus']} CPUs "
          f"({result['one_cpu_pages_per_second']} pages/s on one); "
          f"text layer {result['baseline_text_layer_pages_per_second']} pages/s "
          f"(OCR costs {result['ocr_cost_vs_text_layer']}x)")
    print(f"CER: expected text {result['cer_expected_text']}, single-column {result['cer_single_column']}, "
          f"multi-column {result['cer_multi_column']}; word recall (any order) {result['word_recall_all']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
