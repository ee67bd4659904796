"""Document loaders (one per format, LangChain BaseLoader) and the lazy ingestion pipeline."""

from loaders.errors import DocumentLoadError, PasswordRequiredError, UnsupportedDocumentError
from loaders.pdf import PDFLoader
from loaders.registry import loader_for, register_loader, supported_extensions
from loaders.text import TextLoader

__all__ = [
    "DocumentLoadError",
    "PDFLoader",
    "PasswordRequiredError",
    "TextLoader",
    "UnsupportedDocumentError",
    "loader_for",
    "register_loader",
    "supported_extensions",
]
