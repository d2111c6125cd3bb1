"""Boundaries from STYLE.md, read from the source: pure maths without Django, imports one way.

The import graph counts every import statement, at module level or inside a function, so a
deferred import cannot hide a cycle or an upward edge.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lib", "memory", "exchange", "dialectic", "patterns", "engramsite")
APPS = ("memory", "exchange", "dialectic", "patterns")
# Apps may import apps listed after them, never before: memory imports none of the others.
APP_ORDER = ("engramsite", "exchange", "dialectic", "patterns", "memory", "lib")

# Modules with no Django import: maths, formats, scanning, validation and the libraries.
PURE_MODULES = [
    "lib.embedder",
    "lib.llm.client",
    "memory.errors",
    "memory.validation",
    "memory.maths.activation",
    "memory.maths.attribution",
    "memory.maths.coaccess",
    "memory.maths.effectiveness",
    "memory.maths.learning",
    "memory.maths.learning.text",
    "memory.maths.learning.classify",
    "memory.maths.learning.extract",
    "memory.maths.learning.variants",
    "memory.maths.learning.transcript",
    "memory.maths.learning.fixes",
    "memory.maths.ranking",
    "memory.maths.neighbours",
    "memory.maths.hookhealth",
    "memory.maths.shell",
    "memory.maths.textnorm",
    "memory.scanner",
    "memory.interop",
    "memory.interop.records",
    "memory.interop.yaml_formats",
    "memory.interop.toejough",
    "memory.interop.mem0",
    "exchange.canonical",
    "exchange.crypto",
    "exchange.packet",
    "exchange.fitness",
    "patterns.maths",
    "dialectic.maths",
    "dialectic.render",
    "dialectic.observe",
    "dialectic.practice",
    "dialectic.roles",
    "memory.integrations.artifact_sync",
]

# Layers inside an app, by the module's role (its first name after the app); an import may
# point to the same layer or below, never above. Pure modules are layer 0.
LAYERS = {
    "maths": 0,
    "errors": 0,
    "validation": 0,
    "scanner": 0,
    "interop": 0,
    "apps": 6,  # AppConfig.ready() wires the app in (registrations) like the other edges
    "fields": 1,
    "models": 1,
    "migrations": 1,
    "admin": 6,
    "search": 2,
    "strength": 3,
    "selectors": 3,
    "services": 4,
    "access": 5,
    "charts": 3,
    "health": 5,
    "status": 5,
    "cli": 6,
    "forms": 5,
    "api": 6,
    "schemas": 6,
    "integrations": 6,
    "views": 6,
    "tasks": 6,
    "management": 6,
    "templatetags": 6,
    "urls": 7,
}
DEFAULT_LAYER = 4  # a module with another name is a service-level module


def modules() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        base = ROOT / package
        if not base.is_dir():
            continue
        for path in base.rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join(parts), path


def resolve(name: str, known: set[str]) -> str | None:
    """The project module an import names (the longest known prefix), or None."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def edges() -> dict[str, set[str]]:
    found = dict(modules())
    known = set(found)
    graph: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from memory.services import engrams` names the submodule.
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for target in targets:
                module = resolve(target, known)
                if module and module != name:
                    graph[name].add(module)
                    break
    return graph


def layer(module: str) -> int:
    parts = module.split(".")
    if module in PURE_MODULES or parts[0] == "lib":
        return 0
    if len(parts) == 1:
        return 1  # a package's __init__
    return LAYERS.get(parts[1], DEFAULT_LAYER)


def app_rank(module: str) -> int:
    return APP_ORDER.index(module.split(".")[0])


def test_the_import_graph_has_no_cycles() -> None:
    graph = edges()
    # Tarjan's strongly connected components: any component of two or more is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert cycles == []


def test_imports_never_point_up_a_layer_or_against_the_app_order() -> None:
    upward = []
    for source, targets in edges().items():
        for target in targets:
            if source.split(".")[0] == "engramsite":
                continue  # the wiring imports everything
            if target.split(".")[0] == "engramsite":
                upward.append(f"{source} -> {target} (apps never import engramsite)")
            elif app_rank(target) < app_rank(source):
                upward.append(f"{source} -> {target} (against the app order)")
            elif layer(target) > layer(source):
                upward.append(f"{source} -> {target} (layer {layer(source)} -> {layer(target)})")
    assert sorted(upward) == []


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_modules_import_nothing_of_django_or_the_apps(module: str) -> None:
    """Checked twice: statically (every import statement, and no dynamic way round it) and by
    importing the module alone in a fresh interpreter."""
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.exists():  # a package: its __init__ (its modules are listed on their own)
        path = ROOT / module.replace(".", "/") / "__init__.py"
    tree = ast.parse(path.read_text())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Attribute) and node.attr in {"modules", "import_module"}:
            imported.add(f"sys.{node.attr}")  # sys.modules, importlib.import_module
        elif isinstance(node, ast.Name) and node.id in {"__import__", "import_module"}:
            imported.add(f"sys.{node.id}")
    allowed_apps = {module.split(".")[0], "lib"} | (
        {"memory"} if module.startswith(("exchange", "dialectic")) else set()
    )
    bad = sorted(
        name
        for name in imported
        if name.split(".")[0] in {"django", "ninja", "celery"}
        or name in {"sys.modules", "sys.import_module", "sys.__import__"}
        or (name.split(".")[0] in APPS and name.split(".")[0] not in allowed_apps)
        or (name.split(".")[0] in APPS and layer(name) > 0 and resolve_pure(name) is None)
    )
    assert bad == []
    code = (
        f"import sys, {module}; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'ninja', 'celery'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def resolve_pure(name: str) -> str | None:
    """The pure module an import of a project module names, or None when it is not pure."""
    while name:
        if name in PURE_MODULES or name in {"memory", "memory.maths", "lib", "lib.llm"}:
            return name
        name = name.rpartition(".")[0]
    return None


MAX_MODULE_LINES = 800  # issue #23: each application module stays readable


def test_no_application_module_is_over_800_lines() -> None:
    """Migrations excepted (generated); tests and benches are not application modules."""
    long = {
        name: lines
        for name, path in modules()
        if ".migrations." not in f".{name}."
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
