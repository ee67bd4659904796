"""On every page of the real-world PDFs, Keel's listing of a page's pictures (which does not parse
the content stream again) gives exactly pypdf's own listing."""

from __future__ import annotations

import logging

from pypdf import PdfReader

from keel.loaders.pdf import _image_keys


def test_picture_names_match_pypdfs_listing_on_the_real_world_pdfs(shared_data):
    docs = shared_data / "docs"
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    compared = 0
    for path in sorted(docs.rglob("*.pdf")):
        try:
            pages = list(PdfReader(path, strict=False).pages)
        except Exception:  # noqa: BLE001 - encrypted or corrupt files: the loader rejects them
            continue
        for number, page in enumerate(pages):
            try:
                expected = list(page.images.keys())
            except Exception:  # noqa: BLE001 - pypdf cannot list them either; the loader reports it
                continue
            assert _image_keys(PdfReader(path, strict=False).pages[number]) == expected, (path.name, number)
            compared += 1
    assert compared > 100
