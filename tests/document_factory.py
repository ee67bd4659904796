"""Test documents written by the tests themselves: PDFs with fonts and images (fpdf2), Word
(python-docx), PowerPoint (python-pptx), images (Pillow), and a zip bomb inside a .docx.

Each maker returns the path it wrote. Content is given as data so tests can compare what comes back.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from PIL import Image

# One block of a page: ("text", size_pt, "words ...") or ("image", (width, height), "RGB").
Block = tuple


def make_image(size: tuple[int, int] = (120, 80), mode: str = "RGB", fmt: str = "PNG") -> bytes:
    """An encoded image (one colour with a darker square) in Pillow ``mode`` and format ``fmt``."""
    from PIL import ImageDraw

    colours = {"RGB": ((200, 30, 30), (60, 10, 10)), "RGBA": ((200, 30, 30, 255), (60, 10, 10, 255)),
               "L": (200, 40), "CMYK": ((10, 200, 30, 0), (10, 200, 30, 150))}
    background, square = colours[mode]
    image = Image.new(mode, size, background)
    width, height = size
    ImageDraw.Draw(image).rectangle((width // 4, height // 4, width // 2, height // 2), fill=square)
    out = io.BytesIO()
    image.save(out, format=fmt)
    return out.getvalue()


def make_rich_pdf(path: str | Path, pages: list[list[Block]], password: str | None = None) -> Path:
    """A PDF whose pages hold text blocks in given font sizes and images of given sizes."""
    from fpdf import FPDF

    pdf = FPDF(unit="pt", format="A4")
    pdf.set_auto_page_break(False)
    for blocks in pages:
        pdf.add_page()
        pdf.set_xy(50, 50)
        for kind, size, content in blocks:
            if kind == "text":
                pdf.set_font("Helvetica", size=size)
                pdf.set_x(50)
                pdf.multi_cell(480, size * 1.3, content)
            else:
                width, height = size
                pdf.image(io.BytesIO(make_image((width, height), content, "PNG")), x=50, y=pdf.get_y() + 5, w=width, h=height)
                pdf.set_y(pdf.get_y() + height + 10)
    if password:
        pdf.set_encryption(owner_password=password + "-owner", user_password=password)
    path = Path(path)
    pdf.output(str(path))
    return path


def make_docx(
    path: str | Path,
    *,
    heading: str = "Harbour rules",
    paragraphs: tuple[str, ...] = ("Boats must moor at the eastern quay.",),
    table: list[list[str]] | None = None,
    header: str | None = None,
    footer: str | None = None,
    image: tuple[int, int] | None = None,
    image_alt: str = "",
    second_page: str | None = None,
) -> Path:
    import docx
    from docx.enum.text import WD_BREAK
    from docx.shared import Pt

    document = docx.Document()
    if header:
        document.sections[0].header.paragraphs[0].text = header
    if footer:
        document.sections[0].footer.paragraphs[0].text = footer
    document.add_heading(heading, level=1)
    for text in paragraphs:
        document.add_paragraph(text).runs[0].font.size = Pt(11)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    if image:
        document.add_picture(io.BytesIO(make_image(image)))
        if image_alt:
            document.inline_shapes[-1]._inline.docPr.set("descr", image_alt)
    if second_page:
        document.paragraphs[-1].add_run().add_break(WD_BREAK.PAGE)
        document.add_paragraph(second_page)
    path = Path(path)
    document.save(str(path))
    return path


def make_pptx(
    path: str | Path,
    slides: list[dict],
) -> Path:
    """Slides as dicts: title, body (lines), table (rows), notes, image ((w, h)), image_alt."""
    from pptx import Presentation
    from pptx.util import Inches, Pt

    presentation = Presentation()
    for spec in slides:
        slide = presentation.slides.add_slide(presentation.slide_layouts[1 if spec.get("body") else 5])
        slide.shapes.title.text = spec.get("title", "")
        if spec.get("body"):
            frame = slide.placeholders[1].text_frame
            frame.text = spec["body"][0]
            for line in spec["body"][1:]:
                frame.add_paragraph().text = line
            frame.paragraphs[0].runs[0].font.size = Pt(20)
        if spec.get("table"):
            rows = spec["table"]
            shape = slide.shapes.add_table(len(rows), len(rows[0]), Inches(1), Inches(4.5), Inches(6), Inches(1.5))
            for r, row in enumerate(rows):
                for c, value in enumerate(row):
                    shape.table.cell(r, c).text = value
        if spec.get("image"):
            picture = slide.shapes.add_picture(io.BytesIO(make_image(spec["image"])), Inches(7), Inches(6))
            if spec.get("image_alt"):
                picture._element.nvPicPr.cNvPr.set("descr", spec["image_alt"])
        if spec.get("notes"):
            slide.notes_slide.notes_text_frame.text = spec["notes"]
    path = Path(path)
    presentation.save(str(path))
    return path


def add_zip_bomb(path: str | Path, member: str = "word/media/bomb.bin", unpacked_bytes: int = 64 * 1024 * 1024) -> Path:
    """Append a member of zeros that unpacks ~1000x its packed size (written in pieces)."""
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as package:
        with package.open(member, "w", force_zip64=True) as handle:
            block = bytes(1 << 20)
            for _ in range(unpacked_bytes >> 20):
                handle.write(block)
    return Path(path)
