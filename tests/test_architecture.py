"""What ARCHITECTURE.md claims of the code, checked on the code: no import cycles, no private name imported across modules.

The import graph is read from the source (module-level imports, with the
implicit import of every parent package a dotted import runs); imports inside
functions are deliberate lazy edges and are not part of it.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def modules() -> dict[str, Path]:
    out = {}
    for f in SRC.rglob("*.py"):
        name = ".".join(f.relative_to(SRC).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = f
    return out


def imported(mods: dict[str, Path], cur: str, node: ast.Import | ast.ImportFrom) -> list[tuple[str, str | None]]:
    """(module, name imported from it or None) for each schedlab module ``node`` imports."""
    if isinstance(node, ast.Import):
        return [(a.name, None) for a in node.names if a.name.startswith("schedlab")]
    base = node.module or ""
    if node.level:
        parts = cur.split(".") if mods[cur].name == "__init__.py" else cur.split(".")[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join([*parts, base] if base else parts)
    if not base.startswith("schedlab"):
        return []
    return [(f"{base}.{a.name}", None) if f"{base}.{a.name}" in mods else (base, a.name) for a in node.names]


def graph() -> tuple[dict[str, set[str]], list[str]]:
    mods = modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    private: list[str] = []
    for m, f in mods.items():
        for node in ast.parse(f.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target, name in imported(mods, m, node):
                while target not in mods and "." in target:
                    target = target.rsplit(".", 1)[0]
                if name is not None and name.startswith("_") and not name.startswith("__") and target != m:
                    private.append(f"{m} imports {target}.{name}")
                parts = target.split(".")
                for k in range(2, len(parts) + 1):  # importing a.b.c runs a.b's __init__ first
                    dep = ".".join(parts[:k])
                    if dep in mods and dep != m and not m.startswith(dep + "."):
                        edges[m].add(dep)
    return edges, private


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(edges[v]):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state and (found := visit(w)):
                return found
        state[v] = 2
        path.pop()
        return None

    for v in sorted(edges):
        if v not in state and (found := visit(v)):
            return found
    return None


def test_the_import_graph_has_no_cycle():
    edges, _ = graph()
    assert len(edges) > 150
    found = cycle(edges)
    assert found is None, "import cycle: " + " -> ".join(found or [])


def test_the_check_finds_a_cycle_when_there_is_one():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]


def test_no_module_imports_another_modules_private_names():
    _, private = graph()
    assert private == []
