"""Benchmark: the Adaptive Token Boundary splitter against LangChain and against one plain pass of
the fast tokenizer, on >= 1 MB of real text from ../shared/data, all measured in this run.

Baselines (same tokenizer: the embedding model's, all-MiniLM-L6-v2; same chunk size and overlap):

* **LangChain token splitting**: ``TokenTextSplitter``'s algorithm
  (``langchain_text_splitters.base.split_text_on_tokens``) with the Hugging Face tokenizer's
  encode/decode. ``TokenTextSplitter.from_huggingface_tokenizer`` itself cannot run here: its
  constructor loads tiktoken's GPT-2 encoding from the network and would cut with GPT-2's tokens.
* **LangChain recursive splitting**: ``RecursiveCharacterTextSplitter.from_huggingface_tokenizer``
  (counts tokens per candidate piece; keeps words whole), on a sample because it is slow.
* **plain tokenizer pass**: ``tokenizer(text, return_offsets_mapping=True)`` once per text.

Checked by the benchmark itself: no chunk over the limit (re-tokenized alone), no word cut (every
chunk starts and ends at whitespace or the text's ends), the chunks cover every word. Chunk size
and overlap are Configuration's child_chunk_tokens / child_chunk_overlap. When the real text is
under ``--min-mb`` it is taken whole several times, and each copy gets a fresh splitter, so no copy
profits from the word-count cache of another. Exits 1 when a check or a target is missed.
Run: ``.venv/bin/python -m bench.splitter [--min-mb 1] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

TARGET_VS_LANGCHAIN = 5.0
TARGET_VS_PLAIN_PASS = 1.3


def _best_of(repeat: int, run: Callable[[], object]) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return min(times), result


def check_chunks(texts: list[str], spans_per_text: list[list[tuple[int, int]]], tokenizer, limit: int) -> dict:
    """Chunks over the limit, chunk edges inside a word, words not in any chunk."""
    over = cut = missed = chunks = 0
    for text, spans in zip(texts, spans_per_text):
        chunks += len(spans)
        encoded = tokenizer([text[a:b] for a, b in spans], add_special_tokens=False)["input_ids"] if spans else []
        over += sum(len(ids) > limit for ids in encoded)
        for start, end in spans:
            cut += (start > 0 and not text[start - 1].isspace()) + (end < len(text) and not text[end].isspace())
        covered = bytearray(len(text))
        for start, end in spans:
            covered[start:end] = b"\x01" * (end - start)
        missed += sum(1 for i, ch in enumerate(text) if not covered[i] and not ch.isspace())
    return {"chunks": chunks, "over_limit": over, "words_cut": cut, "chars_missed": missed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--min-mb", type=float, default=1.0, help="real text to split, in MB (default 1)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs per contender (default 3)")
    args = parser.parse_args(argv)

    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from langchain_text_splitters.base import Tokenizer, split_text_on_tokens
    from transformers.utils import logging as hf_logging

    from bench.corpus import real_text_corpus
    from keel.core.configuration import Configuration
    from keel.models.embeddings import get_embedding_tokenizer
    from keel.splitters import AdaptiveTokenBoundarySplitter

    hf_logging.set_verbosity_error()
    cfg = Configuration()
    chunk_size, chunk_overlap = cfg.child_chunk_tokens, cfg.child_chunk_overlap
    tokenizer = get_embedding_tokenizer(cfg)
    per_copy, copies = real_text_corpus(int(args.min_mb * 1_000_000))
    copy_texts = [[text for _, text in named] for named in per_copy]
    texts = [text for group in copy_texts for text in group]
    size_mb = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    print(f"corpus: {len(texts)} real texts from ../shared/data (docs/ and qa/), {size_mb:.2f} MB"
          + (f" (the {size_mb / copies:.2f} MB set taken {copies}x, a fresh splitter per copy)" if copies > 1 else ""))
    print(f"tokenizer: {tokenizer.name_or_path.rsplit('/', 2)[-2]}, chunk_size={chunk_size}, overlap={chunk_overlap}, "
          f"best of {args.repeat}")

    lc_tokenizer = Tokenizer(
        chunk_overlap=chunk_overlap, tokens_per_chunk=chunk_size, decode=tokenizer.decode,
        encode=lambda text: tokenizer.encode(text, add_special_tokens=False),
    )

    def fresh(**kwargs) -> AdaptiveTokenBoundarySplitter:
        return AdaptiveTokenBoundarySplitter(chunk_size, chunk_overlap, tokenizer, **kwargs)

    rows: dict[str, float] = {}
    rows["LangChain token splitting"], lc_chunks = _best_of(
        args.repeat, lambda: [split_text_on_tokens(text=text, tokenizer=lc_tokenizer) for text in texts])
    rows["plain tokenizer pass"], _ = _best_of(
        args.repeat, lambda: [tokenizer(text, add_special_tokens=False, return_offsets_mapping=True) for text in texts])
    def split_all(**kwargs) -> list[list[tuple[int, int]]]:
        """A new splitter per run and per copy of the corpus: its word-count cache starts empty
        for every copy (no warm-cache advantage over LangChain); its construction is timed too."""
        spans = []
        for group in copy_texts:
            splitter = fresh(**kwargs)
            spans.extend(splitter.split_spans(text) for text in group)
        return spans

    rows["adaptive (word counts)"], spans = _best_of(args.repeat, split_all)
    rows["adaptive (offsets only)"], offset_spans = _best_of(args.repeat, lambda: split_all(word_counts=False))
    one_text = "\n\n".join(copy_texts[0])
    rows["adaptive, one concatenated text (1 copy)"], _ = _best_of(args.repeat, lambda: fresh().split_spans(one_text))

    sample = texts[: max(1, len(texts) // 20)]
    sample_share = sum(map(len, sample)) / sum(map(len, texts))
    recursive = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
        tokenizer, chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    recursive_s, _ = _best_of(1, lambda: [recursive.split_text(text) for text in sample])
    ours_sample_s, _ = _best_of(1, lambda: (lambda splitter: [splitter.split_spans(t) for t in sample])(fresh()))

    print(f"\n{'contender':42s} {'seconds':>8s} {'MB/s':>7s}")
    for name, seconds in rows.items():
        mb = size_mb / copies if "1 copy" in name else size_mb
        print(f"{name:42s} {seconds:8.3f} {mb / seconds:7.2f}")
    ours = rows["adaptive (word counts)"]
    vs_langchain = rows["LangChain token splitting"] / ours
    vs_plain = ours / rows["plain tokenizer pass"]
    print(f"\nspeed-up vs LangChain token splitting: {vs_langchain:.1f}x (target >= {TARGET_VS_LANGCHAIN:g}x)")
    print(f"time vs one plain tokenizer pass:      {vs_plain:.2f}x (target <= {TARGET_VS_PLAIN_PASS:g}x)")
    print(f"offsets-only path vs LangChain:         {rows['LangChain token splitting'] / rows['adaptive (offsets only)']:.1f}x; "
          f"vs plain pass: {rows['adaptive (offsets only)'] / rows['plain tokenizer pass']:.2f}x")
    print(f"speed-up vs LangChain recursive splitting ({sample_share:.0%} sample): {recursive_s / ours_sample_s:.0f}x")

    checks = check_chunks(texts, spans, tokenizer, chunk_size)
    offset_checks = check_chunks(texts, offset_spans, tokenizer, chunk_size)
    lc_words_cut = sum(
        (not chunk[:1].isspace() and not chunk[-1:].isspace()) for chunks in lc_chunks for chunk in chunks[1:]
    )
    print(f"\ncorrectness (adaptive, word counts): {checks}")
    print(f"correctness (adaptive, offsets):     {offset_checks}")
    print(f"LangChain token splitting: {sum(map(len, lc_chunks))} chunks, decoded text (lower-cased, [UNK]s), "
          f"{lc_words_cut} chunk starts without a word boundary on either side")
    verdicts = {
        f"speed-up vs LangChain >= {TARGET_VS_LANGCHAIN:g}x": vs_langchain >= TARGET_VS_LANGCHAIN,
        f"time vs plain tokenizer pass <= {TARGET_VS_PLAIN_PASS:g}x": vs_plain <= TARGET_VS_PLAIN_PASS,
        "0 chunks over the limit": checks["over_limit"] == offset_checks["over_limit"] == 0,
        "0 words cut": checks["words_cut"] == offset_checks["words_cut"] == 0,
        "every word in a chunk": checks["chars_missed"] == 0,
    }
    print()
    for name, passed in verdicts.items():
        print(f"{'PASS' if passed else 'FAIL'}  {name}")
    ok = all(verdicts.values())
    print(f"overall: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
