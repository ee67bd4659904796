"""Keel's retrievers and loaders never take the name of a LangChain class: an application that
imports both (``from langchain_classic.document_loaders import TextLoader`` beside Keel's) must
not get one where it meant the other."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import keel.loaders
import keel.retrievers

LANGCHAIN_MODULES = (
    "langchain_core.retrievers",
    "langchain_core.document_loaders",
    "langchain_core.vectorstores",
    "langchain_text_splitters",
    "langchain_classic.retrievers",
    "langchain_classic.document_loaders",  # also names every langchain_community loader
    "langchain_classic.document_loaders.parsers",
)


def langchain_names() -> set[str]:
    names: set[str] = set()
    for name in LANGCHAIN_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        names |= set(getattr(module, "__all__", None) or (n for n in dir(module) if not n.startswith("_")))
    return names


def keel_classes(package) -> dict[str, str]:
    """Class name -> module, for the classes the package's modules define."""
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == module.__name__ and not name.startswith("_"):
                found[name] = module.__name__
    return found


@pytest.mark.parametrize("package", [keel.retrievers, keel.loaders], ids=["retrievers", "loaders"])
def test_no_keel_retriever_or_loader_shadows_a_langchain_name(package):
    pytest.importorskip("langchain_classic")  # where LangChain keeps ParentDocumentRetriever and the loaders' names
    names = langchain_names()
    assert "TextLoader" in names and "ParentDocumentRetriever" in names, "LangChain's names were not found"
    shadowing = {name: module for name, module in keel_classes(package).items() if name in names}
    assert shadowing == {}
