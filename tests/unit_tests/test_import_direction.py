"""Imports point one way: down the floors of the house, never up, and never round in a circle.

Every module of the installed ``keel`` packages is read with ``ast`` (nothing is imported, so a
module-level import and one inside a function count alike) and mapped to its floor. A module may
import modules on its own floor or below; a package may not reach back to itself through others,
and no module may reach back to itself through others. docs/architecture.md draws the same floors.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

# Bottom to top. What a floor holds may import what the floors below hold (and its own floor,
# without a circle); nothing imports upward.
FLOORS: list[tuple[str, ...]] = [
    ("keel.core",),  # settings, state, plain text helpers: imports no other keel package
    ("keel.runtime",),  # the embedded servers and model files
    ("keel.models", "keel.stores"),  # the model clients; the vector store and conversation history
    # loaders hand their documents to the splitters (same floor, one way: the cycle check holds it)
    ("keel.splitters", "keel.loaders", "keel.checks"),
    # components is the container of the models and the retriever that chains and nodes are given
    ("keel.components", "keel.retrievers", "keel.chains"),
    ("keel.nodes",),
    ("keel.graph",),
    # the command may start the server and runs the evals (same floor, one way)
    ("keel.server", "keel.cli", "keel.evals"),
]
FLOOR_OF = {package: level for level, packages in enumerate(FLOORS) for package in packages}


def package_of(module: str) -> str | None:
    """The floor's package a module belongs to (``keel.nodes.route_query`` -> ``keel.nodes``)."""
    parts = module.split(".")
    for size in range(len(parts), 1, -1):
        if ".".join(parts[:size]) in FLOOR_OF:
            return ".".join(parts[:size])
    return None


def installed_modules() -> dict[str, Path]:
    """Module name -> source file, for every module under every installed keel package (the
    design card's folders are installed as keel.graph, keel.nodes, ... by pyproject's package-dir)."""
    modules: dict[str, Path] = {}
    for package in ["keel", *FLOOR_OF]:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue  # keel.components is a module of the keel package
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(root).with_suffix("").parts
            if any(not (root.joinpath(*relative[:i]) / "__init__.py").is_file() for i in range(1, len(relative))):
                continue  # not inside a package
            name = ".".join((package, *relative)).removesuffix(".__init__")
            modules.setdefault(name, path)
    return modules


def imported_modules(module: str, source: str, known: set[str], is_package: bool = False) -> set[str]:
    """The keel modules ``module`` imports anywhere in its source (top level, functions, TYPE_CHECKING)."""
    found: set[str] = set()
    base = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                target = ".".join([*anchor, target] if target else anchor)
            for alias in node.names:  # `from keel.x import y` names module keel.x.y when there is one
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target)
    return {name for name in found if name == "keel" or name.startswith("keel.")}


def import_graph(sources: dict[str, str], packages: set[str] = frozenset()) -> dict[str, set[str]]:
    known = set(sources)
    return {name: imported_modules(name, text, known, name in packages) - {name} for name, text in sources.items()}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in sorted(graph.items()):
        source = package_of(module)
        for target in sorted(targets):
            destination = package_of(target)
            if source is None or destination is None:
                continue
            if FLOOR_OF[destination] > FLOOR_OF[source]:
                problems.append(f"{module} imports {target}: {destination} is above {source}")
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = package_of(module)
        if source is None:
            continue
        edges = packages.setdefault(source, set())
        edges.update(p for p in map(package_of, targets) if p is not None and p != source)
    return packages


@pytest.fixture(scope="module")
def house() -> dict[str, str]:
    return {name: path.read_text(encoding="utf-8") for name, path in installed_modules().items()}


@pytest.fixture(scope="module")
def packages(house) -> set[str]:
    return {name for name, path in installed_modules().items() if path.name == "__init__.py"}


def test_every_floor_package_is_read(house):
    read = {package_of(name) for name in house}
    assert set(FLOOR_OF) <= read, f"no modules read for {set(FLOOR_OF) - read}"
    assert len(house) > 100  # the whole house, not one folder of it


def test_no_module_imports_a_higher_floor(house, packages):
    assert upward_imports(import_graph(house, packages)) == []


def test_no_import_cycle_between_packages(house, packages):
    assert cycles(package_graph(import_graph(house, packages))) == []


def test_no_import_cycle_between_modules(house, packages):
    assert cycles(import_graph(house, packages)) == []


def test_every_module_has_a_floor(house):
    assert [name for name in house if name != "keel" and package_of(name) is None] == []


def test_an_upward_import_inside_a_function_is_caught(house, packages):
    """The rule reads function bodies too: a checks module that borrows from the graph fails."""
    planted = "def check(answer):\n    from keel.graph import build_graph\n    return build_graph\n"
    found = upward_imports(import_graph({**house, "keel.checks.planted": planted}, packages))
    assert found == ["keel.checks.planted imports keel.graph: keel.graph is above keel.checks"]


def test_a_circle_on_one_floor_is_caught(house, packages):
    """Loaders hand documents to the splitters; a splitter that borrowed from the loaders closes a circle."""
    planted = "def split(path):\n    from keel.loaders.pipeline import ingest\n"
    graph = import_graph({**house, "keel.splitters.planted": planted}, packages)
    assert upward_imports(graph) == []  # the same floor: only the circle is wrong
    assert ["keel.loaders", "keel.splitters"] in cycles(package_graph(graph))


def test_a_circle_of_modules_in_one_package_is_caught(house, packages):
    """Two commands that borrow from each other are a circle even inside one package."""
    planted = "def answer():\n    from keel.cli.planted_b import show\n"
    graph = import_graph({**house, "keel.cli.planted_a": planted,
                          "keel.cli.planted_b": "from keel.cli.planted_a import answer\n"}, packages)
    assert ["keel.cli.planted_a", "keel.cli.planted_b"] in cycles(graph)


def test_relative_and_package_imports_resolve_to_modules():
    known = {"keel.checks", "keel.checks.grounding", "keel.checks.parser", "keel.graph", "keel.graph.chat_graph"}
    source = "from . import parser\nfrom .grounding import x\nfrom keel.graph import build_graph\n"
    assert imported_modules("keel.checks.grounding", source, known) == {
        "keel.checks.parser", "keel.checks.grounding", "keel.graph"}
