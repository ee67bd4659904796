"""Turning a file into chunks: the limits that stop oversized files and zip bombs, parent and child
chunk sizes of the token splitter, images kept as chunks, and the n-gram hints embedded with a chunk."""

from __future__ import annotations

from dataclasses import dataclass, field

from keel.core.settings.scope import DEPLOYMENT, default_scope


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True)
class IngestionSettings:
    """File limits, chunk sizes, images and n-gram hints of an upload."""

    # --- what a file may be ----------------------------------------------------------------------------
    max_file_bytes: int = 50 * 1024 * 1024
    max_pages: int = 2000
    max_unpacked_bytes: int = field(
        default=256 * 1024 * 1024,
        metadata={"doc": "Largest total unpacked size of a .docx/.pptx (ZIP) package; more is a zip bomb."},
    )
    max_zip_members: int = field(
        default=10_000,
        metadata={"doc": "A .docx/.pptx package with more parts than this is a zip bomb (real documents have "
                  "hundreds at most)."},
    )
    max_compression_ratio: float = field(
        default=100.0,
        metadata={"doc": "A ZIP member over 1 MiB that unpacks to more than this many times its packed size is a zip bomb."},
    )
    zip_ratio_check_min_bytes: int = field(
        default=1 << 20,
        metadata={"doc": "ZIP parts smaller than this skip the ratio check: small XML parts compress well harmlessly."},
    )
    # --- the token splitter ----------------------------------------------------------------------------
    parent_chunk_tokens: int = 2000
    child_chunk_tokens: int = 150
    child_chunk_overlap: int = 20
    splitter_min_tail_fraction: float = field(
        default=0.25,
        metadata={"doc": "A last chunk adding fewer new tokens than this x chunk size is merged into its neighbour."},
    )
    splitter_window_chars: int = field(
        default=20_000,
        metadata={"doc": "The splitter tokenizes in windows of this many characters (fast tokenizers slow down on huge strings)."},
    )
    splitter_windows_per_block: int = field(
        default=16, metadata={"doc": "Windows per streamed block: memory is bounded by one block whatever the text length."}
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
                  "skipped."},
    )
    ngram_hints: bool = field(
        default=True,
        metadata={"doc": "Embed a chunk's important n-grams (headings, collocations) again with <important> tags, "
                  "so its vector leans to what the chunk is about; see bench/ngram_hints.py."},
    )
    ngram_font_scaling: float = field(
        default=1.0, metadata={"doc": "Font weight = (run size / document mean size) ** this scaling factor."}
    )
    ngram_max_important: int = field(default=10, metadata={"doc": "Important bigrams/trigrams kept per document."})
    ngram_min_count: int = field(
        default=2, metadata={"doc": "Occurrences an n-gram needs to be a collocation (headings need one)."}
    )
    ngram_heading_weight: float = field(
        default=1.2, metadata={"doc": "Font weight from which a run counts as a heading."}
    )
    ngram_hint_repeats: int = field(
        default=2, metadata={"doc": "How often a hinted n-gram appears in the embedded text (tagged once)."}
    )
    ngram_max_hints_per_chunk: int = field(default=3, metadata={"doc": "Hinted n-grams per child chunk at most."})
