"""The setting groups stay honest: a function of a lower layer (loaders, splitters, stores, runtime,
models, retrievers, checks) that says it takes a group reads only that group's settings.

Read from the source with ``ast``: for each parameter annotated with a settings group (a dataclass
of keel/core/settings/, alone, in a union or a combination), every ``cfg.<name>`` (and
``getattr(cfg, "<name>")``) in the function is a field, property or method of that group. Classes
whose ``cfg`` is a group (``__init__(..., cfg: Group)`` or a class annotation ``cfg: Group``, also
inherited) are checked the same way for ``self.cfg.<name>``, and so is ``loader.cfg.<name>`` for a
parameter annotated with such a class. A read outside the group would fail at run time for a caller
that passes the group alone, and would mean the group is not what the function needs.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from keel.core.configuration import Configuration

ROOT = Path(__file__).resolve().parents[2]
# folder in the repository -> the package it is installed as
LAYERS = {
    "loaders": "keel.loaders",
    "retrievers": "keel.retrievers",
    "keel/splitters": "keel.splitters",
    "keel/stores": "keel.stores",
    "keel/runtime": "keel.runtime",
    "keel/models": "keel.models",
    "keel/checks": "keel.checks",
}


def is_group(obj) -> bool:
    return isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__.startswith("keel.core.settings")


def readable(groups) -> frozenset[str]:
    """What a function may read from a value of one of ``groups``: fields, properties, methods."""
    names: set[str] = set()
    for group in groups:
        names |= {item.name for item in dataclasses.fields(group)}
        names |= {name for name in dir(group) if not name.startswith("__")}
    return frozenset(names)


def resolve(annotation: ast.expr | None, namespace: dict) -> list:
    """The objects an annotation names (``A | None``, ``"A"``, ``mod.A``), resolved in the module."""
    if annotation is None:
        return []
    found = []
    for node in ast.walk(annotation):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                found += resolve(ast.parse(node.value, mode="eval").body, namespace)
            except SyntaxError:
                continue
        elif isinstance(node, (ast.Name, ast.Attribute)):
            try:
                found.append(eval(ast.unparse(node), namespace))  # noqa: S307 - names from our own source
            except Exception:
                continue
    return found


@dataclass
class Checked:
    functions: int = 0
    classes: int = 0
    problems: list[str] = field(default_factory=list)


def reads_of(function: ast.AST, owner: str, via: str | None = None) -> list[tuple[str, int]]:
    """(name, line) of each ``owner.name`` (``owner.via.name`` with ``via``) and ``getattr(owner, "name")``."""
    found = []
    for node in ast.walk(function):
        target = node.value if isinstance(node, ast.Attribute) else None
        if via is not None and isinstance(target, ast.Attribute) and target.attr == via:
            target = target.value
        elif via is not None:
            target = None
        if isinstance(target, ast.Name) and target.id == owner:
            found.append((node.attr, node.lineno))
        if (via is None and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == owner
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            found.append((node.args[1].value, node.lineno))
    return found


def cfg_groups_of_class(node: ast.ClassDef, namespace: dict) -> list:
    """The groups a class's ``cfg`` is declared as in its own body, if any."""
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.target.id == "cfg":
            return [obj for obj in resolve(item.annotation, namespace) if is_group(obj)]
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            for arg in item.args.args + item.args.kwonlyargs:
                if arg.arg == "cfg":
                    return [obj for obj in resolve(arg.annotation, namespace) if is_group(obj)]
    return []


def check_module(tree: ast.Module, namespace: dict, where: str, class_groups: dict, result: Checked) -> None:
    """Add to ``result`` every read outside its group in one module (``class_groups``: class -> groups)."""

    def check(function, owner, groups, via=None, what=""):
        allowed = readable(groups)
        for name, line in reads_of(function, owner, via):
            if name not in allowed:
                names = " | ".join(group.__name__ for group in groups)
                result.problems.append(f"{where}:{line} {function.name}: {what or owner}.{name} is not a setting of {names}")

    def check_function(function, cls_groups=None):
        checked = False
        for arg in function.args.posonlyargs + function.args.args + function.args.kwonlyargs:
            named = resolve(arg.annotation, namespace)
            groups = [obj for obj in named if is_group(obj)]
            if groups:
                check(function, arg.arg, groups)
                checked = True
            for obj in named:  # a parameter whose class keeps a group as .cfg (loader.cfg.max_pages)
                if isinstance(obj, type) and class_groups.get(obj):
                    check(function, arg.arg, class_groups[obj], via="cfg", what=f"{arg.arg}.cfg")
                    checked = True
        if cls_groups:
            check(function, "self", cls_groups, via="cfg", what="self.cfg")
            checked = True
        result.functions += checked

    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            cls = namespace.get(node.name)
            groups = class_groups.get(cls) if isinstance(cls, type) else None
            result.classes += bool(groups)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    check_function(item, groups)
    for node in ast.walk(tree):  # module-level and nested functions (methods were checked above)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_method(tree, node):
            check_function(node)


def _is_method(tree: ast.Module, function: ast.AST) -> bool:
    return any(isinstance(node, ast.ClassDef) and function in node.body for node in ast.walk(tree))


def layer_modules():
    for folder, package in LAYERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            name = ".".join((package, *parts)).removesuffix(".__init__")
            yield path, name


def check_layers() -> Checked:
    modules = []
    for path, name in layer_modules():
        module = importlib.import_module(name)
        modules.append((path, ast.parse(path.read_text(encoding="utf-8")), vars(module)))
    class_groups: dict[type, list] = {}
    for _, tree, namespace in modules:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and isinstance(namespace.get(node.name), type):
                class_groups[namespace[node.name]] = cfg_groups_of_class(node, namespace)
    for cls in list(class_groups):  # inherited: a loader subclass keeps KeelLoader's cfg
        if not class_groups[cls]:
            class_groups[cls] = next((class_groups[base] for base in cls.__mro__[1:] if class_groups.get(base)), [])
    result = Checked()
    for path, tree, namespace in modules:
        check_module(tree, namespace, str(path.relative_to(ROOT)), class_groups, result)
    return result


def test_every_setting_a_lower_layer_reads_is_in_the_group_it_takes():
    result = check_layers()
    assert result.problems == []
    # not vacuous: the loaders, splitters, stores, servers, models, k sizing and checks are all seen
    assert result.functions >= 60 and result.classes >= 5


# The fan-out hands a whole Configuration to a retriever maker: a user's own may read any setting.
MAY_IMPORT_CONFIGURATION = {"retrievers/fanout.py"}


def test_lower_layers_import_their_groups_not_the_whole_configuration():
    importing = set()
    for path, _ in layer_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module else
                     [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            if "keel.core.configuration" in names:
                importing.add(str(path.relative_to(ROOT)))
    assert importing == MAY_IMPORT_CONFIGURATION


def test_the_check_finds_a_read_outside_the_group():
    source = '''
from keel.core.settings import IngestionSettings, RuntimeSettings, SplitterSettings

class Loader:
    def __init__(self, cfg: IngestionSettings | None = None):
        self.cfg = cfg

    def pages(self):
        return self.cfg.max_pages + self.cfg.redis_url

def split(cfg: "SplitterSettings"):
    return cfg.child_chunk_tokens, cfg.embedding_model_path, getattr(cfg, "index_name", None)

def connect(cfg: RuntimeSettings | None, loader: Loader):
    return cfg.redis_url, cfg.max_file_bytes, loader.cfg.max_pages, loader.cfg.ttl_seconds
'''
    tree = ast.parse(source)
    namespace: dict = {}
    exec(compile(tree, "<example>", "exec"), namespace)  # noqa: S102 - the example above
    class_groups = {namespace["Loader"]: cfg_groups_of_class(tree.body[1], namespace)}
    result = Checked()
    check_module(tree, namespace, "example.py", class_groups, result)
    found = {problem.split(": ", 1)[1] for problem in result.problems}
    assert found == {
        "self.cfg.redis_url is not a setting of IngestionSettings",
        "cfg.index_name is not a setting of SplitterSettings",
        "cfg.max_file_bytes is not a setting of RuntimeSettings",
        "loader.cfg.ttl_seconds is not a setting of IngestionSettings",
    }
    assert result.functions == 4


@pytest.mark.parametrize("group", sorted({cls for cls in Configuration.__mro__ if is_group(cls)}, key=lambda c: c.__name__),
                         ids=lambda group: group.__name__)
def test_a_configuration_is_every_group_and_a_group_holds_the_same_fields(group):
    assert issubclass(Configuration, group)
    config_fields = {item.name: item for item in dataclasses.fields(Configuration)}
    for item in dataclasses.fields(group):
        assert item.type == config_fields[item.name].type
        assert item.metadata == config_fields[item.name].metadata
    assert dataclasses.asdict(group()) == {name: value for name, value in dataclasses.asdict(Configuration()).items()
                                            if name in {item.name for item in dataclasses.fields(group)}}
