"""Document loaders (one per format, LangChain BaseLoader with lazy_load), the dispatcher, base64
uploads, OCR of pictures (``loaders.ocr``), and the lazy ingestion pipeline (``loaders.pipeline``)."""

from keel.loaders.blob import Base64BlobParser, blob_from_base64, loader_for_base64
from keel.loaders.docx import DocxLoader
from keel.loaders.errors import DocumentLoadError, PasswordRequiredError, UnsupportedDocumentError
from keel.loaders.html import HtmlLoader
from keel.loaders.image import ImageLoader
from keel.loaders.legacy import DocLoader, PptLoader, XlsLoader
from keel.loaders.pdf import PdfLoader
from keel.loaders.pptx import PptxLoader
from keel.loaders.registry import loader_for, loader_for_blob, register_loader, supported_extensions
from keel.loaders.tables import CsvLoader, XlsxLoader
from keel.loaders.text import PlainTextLoader

__all__ = [
    "Base64BlobParser",
    "CsvLoader",
    "DocLoader",
    "DocumentLoadError",
    "DocxLoader",
    "HtmlLoader",
    "ImageLoader",
    "PlainTextLoader",
    "PdfLoader",
    "PasswordRequiredError",
    "PptLoader",
    "PptxLoader",
    "UnsupportedDocumentError",
    "XlsLoader",
    "XlsxLoader",
    "blob_from_base64",
    "loader_for",
    "loader_for_base64",
    "loader_for_blob",
    "register_loader",
    "supported_extensions",
]
