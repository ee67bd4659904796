"""Turning a file into chunks: the limits that stop oversized files and zip bombs, parent and child
chunk sizes of the token splitter, images kept as chunks, and the n-gram hints embedded with a chunk."""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.checks import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, SHARE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class IngestionSettings(CheckedSettings):
    """File limits, chunk sizes, images and n-gram hints of an upload."""

    # --- what a file may be ----------------------------------------------------------------------------
    max_file_bytes: int = field(
        default=50 * 1024 * 1024,
        metadata={"doc": "Largest file Keel ingests, in bytes (an upload's body is checked before it is read).",
                  **AT_LEAST_ONE},
    )
    max_pages: int = field(
        default=2000, metadata={"doc": "A PDF with more pages than this is refused.", **AT_LEAST_ONE}
    )
    max_unpacked_bytes: int = field(
        default=256 * 1024 * 1024,
        metadata={"doc": "Largest total unpacked size of a .docx/.pptx (ZIP) package, in bytes; more is a zip bomb.",
                  **AT_LEAST_ONE},
    )
    max_zip_members: int = field(
        default=10_000,
        metadata={"doc": "A .docx/.pptx package with more parts than this is a zip bomb (real documents have "
                  "hundreds at most).", **AT_LEAST_ONE},
    )
    max_compression_ratio: float = field(
        default=100.0,
        metadata={"doc": "A ZIP member over zip_ratio_check_min_bytes that unpacks to more than this many times its "
                  "packed size is a zip bomb.", "minimum": 1.0},
    )
    zip_ratio_check_min_bytes: int = field(
        default=1 << 20,
        metadata={"doc": "ZIP parts smaller than this many bytes skip the ratio check: small XML parts compress well "
                  "harmlessly.", **NON_NEGATIVE},
    )
    ingest_workers: int = field(
        default=0,
        metadata={"doc": "Processes that read and split files ahead of the embedder when one ingest has several "
                  "files; 0 = one per CPU core, 1 = read in the ingesting process, one file after another.",
                  **NON_NEGATIVE},
    )
    ingest_read_ahead_bytes: int = field(
        default=64 * 1024 * 1024,
        metadata={"doc": "Files read ahead of the embedder by ingest_workers hold at most this many bytes together "
                  "(each worker always has one): what bounds an ingest's memory, not the number of files.",
                  **AT_LEAST_ONE},
    )
    # --- reading scans, legacy Office files and tables ---------------------------------------------------
    ocr_enabled: bool = field(
        default=True,
        metadata={"doc": "Read the text of image files, scanned PDF pages and pictures inside documents with "
                  "Tesseract (offline; installed by scripts/setup.sh). Off: pictures are kept as images only."},
    )
    ocr_language: str = field(
        default="eng",
        metadata={"doc": "Tesseract language(s) to read, e.g. 'eng' or 'eng+deu' (each needs its Debian "
                  "tesseract-ocr-<lang> package)."},
    )
    ocr_seconds_per_page: float = field(
        default=60.0,
        metadata={"doc": "OCR of one page or picture is stopped after this many seconds; its text is reported "
                  "as lost and the rest of the document goes on.", **POSITIVE},
    )
    ocr_max_pages: int = field(
        default=200,
        metadata={"doc": "Pictures or scanned pages read by OCR per document at most; the others are kept as "
                  "images and reported.", **NON_NEGATIVE},
    )
    ocr_batch_pictures: int = field(
        default=16,
        metadata={"doc": "Pictures of one document read together by one Tesseract process, which pays its start "
                  "(~0.1 s, more than a small picture takes) once. The document's other pages wait for the batch: "
                  "at most this many are held back.", **AT_LEAST_ONE},
    )
    ocr_workers: int = field(
        default=0,
        metadata={"doc": "Tesseract processes that read one batch of a document's pictures at once, each with one "
                  "thread; 0 = the CPUs this process may use (the container's quota, not the host's cores), "
                  "shared with the other ingest workers.", **NON_NEGATIVE},
    )
    ocr_max_image_pixels: int = field(
        default=40_000_000,
        metadata={"doc": "A picture larger than this many pixels is not read by OCR (it is reported): about a "
                  "600 dpi A3 scan.", **AT_LEAST_ONE},
    )
    ocr_min_confidence: float = field(
        default=60.0,
        metadata={"doc": "A page whose OCR words average less than this confidence (0-100, Tesseract's) is "
                  "reported as low-confidence: its text may be wrong.", "minimum": 0.0, "maximum": 100.0},
    )
    max_undecodable_share: float = field(
        default=0.5,
        metadata={"doc": "A PDF page whose characters are more than this share undecodable glyphs (a damaged font "
                  "encoding) loses its text, reported, rather than storing gibberish.", **SHARE},
    )
    legacy_converter_seconds: float = field(
        default=60.0,
        metadata={"doc": "A legacy .doc/.xls file whose converter (catdoc, xls2csv) runs longer than this is "
                  "refused.", **POSITIVE},
    )
    max_table_rows: int = field(
        default=100_000,
        metadata={"doc": "A .csv file, spreadsheet or text file with more table rows than this (all sheets and "
                  "Markdown tables together) is refused.",
                  **AT_LEAST_ONE},
    )
    # --- the token splitter ----------------------------------------------------------------------------
    parent_chunk_tokens: int = field(
        default=2000,
        metadata={"doc": "Size of a parent chunk, the passage the model reads, in tokens of the embedding model's "
                  "tokenizer.", **AT_LEAST_ONE},
    )
    child_chunk_tokens: int = field(
        default=150,
        metadata={"doc": "Size of a child chunk, the piece that is embedded and searched, in tokens; at most "
                  "parent_chunk_tokens.", **AT_LEAST_ONE},
    )
    child_chunk_overlap: int = field(
        default=20,
        metadata={"doc": "Tokens neighbouring child chunks share, so a sentence cut at a boundary is found whole.",
                  **NON_NEGATIVE, "below_setting": "child_chunk_tokens"},
    )
    splitter_min_tail_fraction: float = field(
        default=0.25,
        metadata={"doc": "A last chunk adding fewer new tokens than this x chunk size is merged into its neighbour.",
                  **SHARE},
    )
    splitter_window_chars: int = field(
        default=20_000,
        metadata={"doc": "The splitter tokenizes in windows of this many characters (fast tokenizers slow down on huge "
                  "strings).", **AT_LEAST_ONE},
    )
    splitter_windows_per_block: int = field(
        default=16, metadata={"doc": "Windows per streamed block: memory is bounded by one block whatever the text "
                              "length.", **AT_LEAST_ONE}
    )
    # --- images and n-gram hints ----------------------------------------------------------------------
    extract_images: bool = field(
        default=True,
        metadata={"doc": "Keep the images inside PDF/Word/PowerPoint files as image documents (base64, with size "
                  "and colour mode), stored with the document's text chunks."},
    )
    min_image_side_pixels: int = field(
        default=32,
        metadata={"doc": "Images narrower or lower than this are decoration (rules, bullets, spacers) and are "
                  "skipped.", **NON_NEGATIVE},
    )
    ngram_hints: bool = field(
        default=True,
        metadata={"doc": "Embed a chunk's important n-grams (headings, collocations) again with <important> tags, "
                  "so its vector leans to what the chunk is about; see bench/ngram_hints.py."},
    )
    ngram_font_scaling: float = field(
        default=1.0, metadata={"doc": "Font weight = (run size / document mean size) ** this scaling factor.",
                               **NON_NEGATIVE}
    )
    ngram_max_important: int = field(
        default=10, metadata={"doc": "Important bigrams/trigrams kept per document.", **NON_NEGATIVE}
    )
    ngram_min_count: int = field(
        default=2, metadata={"doc": "Occurrences an n-gram needs to be a collocation (headings need one).",
                             **AT_LEAST_ONE}
    )
    ngram_heading_weight: float = field(
        default=1.2, metadata={"doc": "Font weight from which a run counts as a heading.", **POSITIVE}
    )
    ngram_hint_repeats: int = field(
        default=2, metadata={"doc": "How often a hinted n-gram appears in the embedded text (tagged once); 0 = no "
                             "hints.", **NON_NEGATIVE}
    )
    ngram_max_hints_per_chunk: int = field(
        default=3, metadata={"doc": "Hinted n-grams per child chunk at most.", **NON_NEGATIVE}
    )
