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
