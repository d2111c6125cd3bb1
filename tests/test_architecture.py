"""Boundaries from STYLE.md: pure maths without Django, exchange -> memory only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE_MODULES = [
    "memory.maths.activation",
    "memory.maths.coaccess",
    "memory.maths.effectiveness",
    "memory.maths.textnorm",
    "memory.scanner",
    "memory.maths.ranking",
    "lib.embedder",
    "lib.llm.client",
    "memory.interop",
    "exchange.canonical",
    "exchange.crypto",
    "exchange.packet",
    "exchange.fitness",
]


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_modules_do_not_import_django(module: str) -> None:
    code = f"import sys, {module}; print(any(m == 'django' or m.startswith('django.') for m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_memory_never_imports_exchange() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "memory").rglob("*.py")
        if any(
            name == "exchange" or name.startswith("exchange.") for name in imported_modules(path)
        )
    ]
    assert offenders == []


def test_apps_do_not_import_engramsite() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for app in ("memory", "exchange")
        for path in (ROOT / app).rglob("*.py")
        if any(name.startswith("engramsite") for name in imported_modules(path))
    ]
    assert offenders == []
