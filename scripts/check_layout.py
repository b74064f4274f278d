"""Check that the package keeps its pipeline layout (docs/architecture.md).

Reads every module of ``nsysdiff`` as text (nothing is imported or run) and reports:

* import cycles among nsysdiff modules (every import counts, including those inside
  functions: a lazy import hides a cycle from Python, not from a reader);
* modules loose at the package root (at most 6);
* modules over 800 lines;
* imports that run against the flow of data: a stage may import itself and the stages
  before it, never one after it (``STAGES``), and nothing outside ``render/``, ``cli/``
  and ``api/`` imports ``nsysdiff.render``;
* imports of ``nsysdiff.synth`` (synthetic traces) from anywhere in the package.

``python scripts/check_layout.py`` prints the figures and exits 1 on any violation.
"""

from __future__ import annotations

import ast
import graphlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "nsysdiff"
MAX_LOOSE = 6
MAX_LINES = 800

# The stages in the order data flows through them; a module may import its own stage and
# those listed before it. ``errors`` and ``units`` are leaves every stage may use.
# ``history`` keeps fingerprints over time and turns them into run sets and change points:
# it reads fingerprints and compare's statistics and is read by render, api and cli.
STAGES = (
    "errors",
    "units",
    "safe",
    "trace",
    "fingerprint",
    "compare",
    "history",
    "rules",
    "frames",
    "render",
    "api",
    "cli",
    "__main__",
)
# The synthetic-trace writer sits beside the pipeline: it may read the lower stages' names
# (errors, safe) but nothing in the package may import it.
SIDE = {"synth": ("errors", "units", "safe", "synth")}
RENDER_ALLOWED = ("render", "cli", "api", "__main__")


@dataclass
class Layout:
    modules: dict[str, Path] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    imports: dict[str, set[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    cycles: list[list[str]] = field(default_factory=list)


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    """The nsysdiff module an import names, or None outside the package."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def _imports(tree: ast.AST, here: str, is_package: bool, modules: dict[str, Path]) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE and (m := _resolve(alias.name, modules)):
                    out.add(m)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".") if is_package else here.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            if source.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                # ``from pkg import submodule`` depends on the submodule, not on the package's face.
                sub = f"{source}.{alias.name}"
                m = sub if sub in modules else _resolve(source, modules)
                if m:
                    out.add(m)
    out.discard(here)
    return out


def measure(root: Path) -> Layout:
    layout = Layout()
    for path in sorted(root.rglob("*.py")):
        layout.modules[module_name(root, path)] = path
    for name, path in layout.modules.items():
        text = path.read_text(encoding="utf-8")
        layout.lines[name] = len(text.splitlines())
        layout.imports[name] = _imports(ast.parse(text), name, path.name == "__init__.py", layout.modules)
    return layout


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def check(root: Path) -> Layout:
    layout = measure(root)
    layout.cycles = _cycles(layout.imports)
    # graphlib is the second opinion: a topological order exists only without cycles.
    if not layout.cycles:
        graphlib.TopologicalSorter(layout.imports).static_order()
    for cycle in layout.cycles:
        layout.problems.append(f"import cycle: {' <-> '.join(cycle)}")
    loose = loose_modules(layout)
    if len(loose) > MAX_LOOSE:
        layout.problems.append(f"{len(loose)} modules loose at the package root (at most {MAX_LOOSE}): {loose}")
    for name, n in sorted(layout.lines.items()):
        if n > MAX_LINES:
            layout.problems.append(f"{name}: {n} lines (at most {MAX_LINES})")
    for name, targets in sorted(layout.imports.items()):
        here = stage(name)
        for target in sorted(targets):
            there = stage(target)
            if there == "render" and here not in RENDER_ALLOWED:
                layout.problems.append(f"{name} imports {target}: only render/, cli/ and api/ may")
            elif there == "synth" and here != "synth":
                layout.problems.append(f"{name} imports {target}: synthetic traces are for tests and examples")
            elif here in SIDE:
                if there not in SIDE[here]:
                    layout.problems.append(f"{name} imports {target}: synth may use only {SIDE[here]}")
            elif here in STAGES and there in STAGES and STAGES.index(there) > STAGES.index(here):
                layout.problems.append(f"{name} imports {target}: {there} comes after {here} in the flow")
    return layout


def loose_modules(layout: Layout) -> list[str]:
    return sorted(n for n, p in layout.modules.items() if n.count(".") == 1 and p.name != "__init__.py")


def main() -> int:
    root = Path(__file__).resolve().parent.parent / PACKAGE
    layout = check(root)
    biggest = sorted(layout.lines.items(), key=lambda kv: -kv[1])[:5]
    print(f"modules: {len(layout.modules)}")
    print(f"import cycles: {len(layout.cycles)}")
    print(f"loose at the root: {len(loose_modules(layout))} ({', '.join(loose_modules(layout))})")
    print(f"over {MAX_LINES} lines: {sum(n > MAX_LINES for n in layout.lines.values())}")
    print("largest: " + ", ".join(f"{n} {c}" for n, c in biggest))
    for problem in layout.problems:
        print(f"problem: {problem}")
    return 1 if layout.problems else 0


if __name__ == "__main__":
    sys.exit(main())
