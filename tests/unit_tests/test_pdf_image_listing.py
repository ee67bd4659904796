"""A PDF page's pictures are listed without parsing its content stream a second time (text
extraction parsed it already): the same names pypdf's own listing gives, for pictures on the page,
inside forms (nested, drawn twice, drawing themselves) and inline in the content."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from pypdf import PdfReader

from keel.loaders.pdf import _image_keys
from tests.pdf_factory import write_pdf_objects

GRAY_2x2 = b"\x00\xff\xff\x00"


def _image(name: bytes = b"") -> bytes:
    data = zlib.compress(GRAY_2x2)
    return (b"<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8 "
            b"/Filter /FlateDecode /Length " + str(len(data)).encode() + b" >>\nstream\n" + data + b"\nendstream")


def _form(resources: bytes, content: bytes) -> bytes:
    return (b"<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources " + resources + b" /Length "
            + str(len(content)).encode() + b" >>\nstream\n" + content + b"\nendstream")


def _pdf(path: Path, page_resources: bytes, content: bytes, extra: dict[int, bytes]) -> Path:
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Resources " + page_resources + b" /Contents 4 0 R >>",
        4: b"<< /Length " + str(len(content)).encode() + b" >>\nstream\n" + content + b"\nendstream",
        **extra,
    }
    return write_pdf_objects(path, objects)


CASES = {
    "page image": (b"<< /XObject << /Im0 5 0 R >> >>", b"q 100 0 0 100 0 0 cm /Im0 Do Q", {5: _image()}),
    "image in a nested form drawn twice": (
        b"<< /XObject << /Fm0 5 0 R /Fm1 5 0 R /Im9 7 0 R >> >>", b"/Fm0 Do /Fm1 Do /Im9 Do",
        {5: _form(b"<< /XObject << /Inner 6 0 R >> >>", b"/Inner Do"),
         6: _form(b"<< /XObject << /Im1 7 0 R /Self 6 0 R >> >>", b"/Im1 Do"), 7: _image()},
    ),
    "inline image": (b"<< >>", b"q 100 0 0 100 0 0 cm BI /W 2 /H 2 /CS /G /BPC 8 ID " + GRAY_2x2 + b" EI Q", {}),
    "inline image beside a page image": (
        b"<< /XObject << /Im0 5 0 R >> >>", b"/Im0 Do\nBI /W 2 /H 2 /CS /G /BPC 8 ID " + GRAY_2x2 + b"\nEI", {5: _image()},
    ),
    "text only, a string holding BI": (
        b"<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>",
        b"BT /F1 12 Tf 10 10 Td (ABI BI ID EI) Tj ET", {},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_picture_names_match_pypdfs_listing(tmp_path, case):
    resources, content, extra = CASES[case]
    path = _pdf(tmp_path / "case.pdf", resources, content, extra)
    expected = list(PdfReader(path).pages[0].images.keys())
    assert _image_keys(PdfReader(path).pages[0]) == expected
    if case != "text only, a string holding BI":
        assert expected  # each case really has pictures to find
