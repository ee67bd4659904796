"""What an application imports from Keel: a small, typed surface that costs nothing to import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import keel


def test_the_public_names_are_the_graphs_builders_and_the_configuration():
    from keel.core.configuration import Configuration
    from keel.graph import build_graph, build_ingestion_graph

    assert keel.__all__ == ["build_graph", "build_ingestion_graph", "Configuration"]
    assert (keel.build_graph, keel.build_ingestion_graph, keel.Configuration) == (
        build_graph, build_ingestion_graph, Configuration)


def test_an_unknown_name_is_an_attribute_error():
    try:
        keel.no_such_thing  # noqa: B018
    except AttributeError as error:
        assert "no_such_thing" in str(error)
    else:
        raise AssertionError("keel.no_such_thing should not exist")


def test_importing_keel_loads_no_graph_or_model_library():
    loaded = subprocess.run(
        [sys.executable, "-c", "import keel, sys; print(sorted(m for m in ('langgraph', 'torch', 'redis') "
                               "if m in sys.modules))"],
        capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    assert loaded == "[]"


def test_the_package_says_it_is_typed():
    assert (Path(keel.__file__).parent / "py.typed").is_file()
