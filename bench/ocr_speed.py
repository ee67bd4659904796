"""Benchmark: how fast and how accurately Keel's OCR reads pages, on real documents whose text is known.

Known text: ``crazyones.pdf`` ships its expected text (pypdf's test resources, ``crazyones.txt``);
the other born-digital PDFs of the corpus carry a text layer that serves as the reference. Each
page is rendered to a picture with poppler's ``pdftoppm`` (as a scanner would make it, at
``--dpi``), read by ``keel.loaders.ocr.ocr_image`` with the ingestion defaults (Tesseract, one
thread, page segmentation with orientation detection), and compared with the reference: character
error rate = Levenshtein edits / reference characters, after Unicode NFKC and whitespace
normalisation. Reading order counts in the CER (a paragraph Tesseract puts elsewhere is many
edits), so the words found regardless of order are reported beside it (word recall: reference
words, as a multiset, that the OCR text holds), and multi-column pages apart. The corpus's real
scans (no reference) are timed as well.

Baseline in the same run: pypdf's text-layer extraction of the same pages (what a born-digital
page costs); the ratio says what a scan costs more.

    .venv/bin/python -m bench.ocr_speed [--dpi 200] [--max-pages 2] [--json]

About a minute of one core at the defaults; run it once.
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


def run(dpi: int, max_pages: int) -> dict:
    from pypdf import PdfReader

    from keel.core.configuration import Configuration
    from keel.loaders.ocr import ocr_available, ocr_image

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    cfg = Configuration()
    if reason := ocr_available(cfg):
        raise SystemExit(reason)
    if shutil.which("pdftoppm") is None:
        raise SystemExit("pdftoppm is not installed (Debian's poppler-utils; scripts/setup.sh installs it)")
    docs = shared_data() / "docs"
    rows, scans = [], []
    ocr_seconds, layer_seconds = [], []
    with tempfile.TemporaryDirectory(prefix="keel-ocr-bench-") as tmp:
        folder = Path(tmp)
        for name, expected, multi_column in KNOWN_TEXT:
            pdf = docs / name
            reader = PdfReader(pdf)
            for number in range(1, min(len(reader.pages), max_pages) + 1):
                started = time.perf_counter()
                layer = reader.pages[number - 1].extract_text() or ""
                layer_seconds.append(time.perf_counter() - started)
                reference = normalise((docs / expected).read_text(encoding="utf-8") if expected else layer)
                if not reference:
                    continue
                result = ocr_image(render(pdf, number, dpi, folder), cfg)
                ocr_seconds.append(result.seconds)
                read = normalise(result.text)
                errors = edit_distance(read, reference)
                rows.append({"file": Path(name).name, "page": number, "reference_chars": len(reference),
                             "edits": errors, "cer": round(errors / len(reference), 4),
                             "word_recall": round(word_recall(read, reference), 4),
                             "confidence": result.confidence, "seconds": result.seconds,
                             "multi_column": multi_column, "expected_text": bool(expected)})
        for name in SCANS:  # real scans: the pictures as embedded, read as ingestion reads them
            reader = PdfReader(docs / name)
            for number, page in enumerate(reader.pages[:max_pages], start=1):
                for image in page.images:
                    result = ocr_image(image.data, cfg)
                    ocr_seconds.append(result.seconds)
                    scans.append({"file": Path(name).name, "page": number, "seconds": result.seconds,
                                  "confidence": result.confidence, "words": result.words})

    def cer(selected: list[dict]) -> float | None:
        chars = sum(r["reference_chars"] for r in selected)
        return round(sum(r["edits"] for r in selected) / chars, 4) if chars else None

    single = [r for r in rows if not r["multi_column"]]
    ocr_rate = len(ocr_seconds) / sum(ocr_seconds)
    layer_rate = len(layer_seconds) / sum(layer_seconds)
    return {
        "dpi": dpi,
        "pages_ocr": len(ocr_seconds),
        "ocr_pages_per_second": round(ocr_rate, 3),
        "ocr_seconds_per_page": {"mean": round(statistics.fmean(ocr_seconds), 2), "max": round(max(ocr_seconds), 2)},
        "baseline_text_layer_pages_per_second": round(layer_rate, 1),
        "ocr_cost_vs_text_layer": round(layer_rate / ocr_rate, 1),
        "cer_expected_text": cer([r for r in rows if r["expected_text"]]),
        "cer_single_column": cer(single),
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
          f"(mean {result['ocr_seconds_per_page']['mean']} s, max {result['ocr_seconds_per_page']['max']} s); "
          f"text layer {result['baseline_text_layer_pages_per_second']} pages/s "
          f"(OCR costs {result['ocr_cost_vs_text_layer']}x)")
    print(f"CER: expected text {result['cer_expected_text']}, single-column {result['cer_single_column']}, "
          f"multi-column {result['cer_multi_column']}; word recall (any order) {result['word_recall_all']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
