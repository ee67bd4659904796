"""Images as documents (multimodal type "image"): image files, and the images other
loaders find inside PDF, Word and PowerPoint files.

An image document's ``page_content`` is the image, base64-encoded; its metadata says what it is:
``mime_type``, ``width``, ``height``, ``colour_mode`` (Pillow's mode: RGB, L, CMYK, ...) and
``channels``. Images below ``cfg.min_image_side_pixels`` on either side (rules, bullets, spacers)
are decoration and skipped when found inside a document.
"""

from __future__ import annotations

import base64
import io
import logging
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document

from keel.loaders.base import KeelLoader
from keel.loaders.errors import UnsupportedDocumentError
from keel.loaders.picture_text import PictureText

logger = logging.getLogger(__name__)

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".tif", ".tiff")
IMAGE_MIME_TYPES = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/tiff": ".tiff",
}


@dataclass(frozen=True)
class ImageInfo:
    """What a picture is (type, size, colours): kept as metadata beside its text."""
    mime_type: str
    width: int
    height: int
    colour_mode: str
    channels: int

    def metadata(self) -> dict[str, Any]:
        return {
            "mime_type": self.mime_type,
            "width": self.width,
            "height": self.height,
            "colour_mode": self.colour_mode,
            "channels": self.channels,
        }


def inspect_image(data: bytes) -> ImageInfo:
    """Size, colour mode and type of an encoded image; ValueError with the reason if unreadable."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                image.verify()  # reads the whole stream: truncated or corrupt data fails here
            with Image.open(io.BytesIO(data)) as image:
                image_format = image.format or ""
                info = ImageInfo(
                    mime_type=Image.MIME.get(image_format, f"image/{image_format.lower() or 'unknown'}"),
                    width=image.width,
                    height=image.height,
                    colour_mode=image.mode,
                    channels=len(image.getbands()),
                )
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ValueError(f"image too large to decode safely (decompression bomb): {exc}") from exc
    except UnidentifiedImageError as exc:
        raise ValueError("not a readable image (unknown or corrupt format)") from exc
    except (OSError, SyntaxError, ValueError, TypeError, EOFError) as exc:
        raise ValueError(f"corrupt or truncated image: {exc}") from exc
    if info.width < 1 or info.height < 1:
        raise ValueError(f"image has no pixels ({info.width}x{info.height})")
    return info


def embedded_image_document(
    loader: KeelLoader, data: bytes, *, page: int, total_pages: int, image_index: int, alt_text: str = "",
    page_content_only: bool = False,
) -> Document | None:
    """An image found inside a document, or None (logged) when it is decoration or unreadable:
    one bad picture must not cost the user the document's text. ``page_content_only``: the picture
    is all its page holds (a scan), so it is kept whatever its size."""
    try:
        info = inspect_image(data)
    except ValueError as exc:
        logger.info("%s: image %d on page %d skipped: %s", loader.name, image_index, page, exc)
        loader.warn(f"page {page}: picture {image_index} cannot be read, it is not kept: {exc}")
        return None
    min_side = loader.cfg.min_image_side_pixels
    if min(info.width, info.height) < min_side and not page_content_only:
        return None
    meta = loader.metadata(page, total_pages, "image", image_index=image_index, **info.metadata())
    if alt_text.strip():
        meta["alt_text"] = " ".join(alt_text.split())
    return Document(page_content=base64.b64encode(data).decode("ascii"), metadata=meta)


def is_decoration(loader: KeelLoader, data: bytes) -> bool:
    """Whether an embedded picture is too small to hold anything (a rule, bullet or spacer), or
    unreadable; such a picture is not read by OCR either."""
    try:
        info = inspect_image(data)
    except ValueError:
        return True
    return min(info.width, info.height) < loader.cfg.min_image_side_pixels


class ImageLoader(KeelLoader):
    """An image file (PNG, JPEG, GIF, WebP, TIFF) as one image document, page 1 of 1, followed by
    its text read by OCR (when it has any)."""

    def open(self) -> ImageInfo:
        """Check the image decodes (truncated, corrupt, decompression bomb: a clear error)."""
        try:
            return inspect_image(self.read_bytes())
        except ValueError as exc:
            raise UnsupportedDocumentError(self.name, str(exc)) from exc

    def lazy_load(self) -> Iterator[Document]:
        info = self.open()
        meta = self.metadata(1, 1, "image", image_index=1, **info.metadata())
        data = self.read_bytes()
        yield Document(page_content=base64.b64encode(data).decode("ascii"), metadata=meta)
        text = PictureText(self).document(data, page=1, total_pages=1, image_index=1)
        if text is not None:
            yield text
