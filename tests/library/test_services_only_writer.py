"""The services package (library/services/) is the only code that writes a procedure version's
status, and its `_` helpers are its own. Read from the source (AST, nothing is imported), over the
server's code and the benchmarks:

- no module outside library/services/ imports a name starting with `_` from library.services or one
  of its modules, nor reads one as an attribute of the package (`services._lock_version`);
- services/__init__ re-exports no `_` name;
- no module outside library/services/ (migrations aside: they shape the table) writes a version's
  status: `.update(status=…)` on a ProcedureVersion queryset or a procedure's `versions`,
  `ProcedureVersion(…, status=…)` / `.create(status=…)` with anything but CANDIDATE (a new version
  starts there), `<version>.status = …`, `.save(update_fields=[…"status"…])` on a version, or SQL
  that updates the table's status.

The checker itself is tested on small sources below, so a pattern it stops seeing fails here too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("library", "reviews", "procmem_site", "bench")
SERVICES = ROOT / "library" / "services"
WRITE_METHODS = {"update", "create", "get_or_create", "update_or_create", "bulk_create"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, node: ast.ImportFrom, *, package: bool) -> str:
    """The absolute module an ImportFrom names, relative imports resolved against `module` (a
    package's own name when `package`, its __init__)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".") if package else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, *([node.module] if node.module else [])])


def _is_services(name: str) -> bool:
    return name == "library.services" or name.startswith("library.services.")


def _text(node: ast.AST) -> str:
    return ast.unparse(node)


def _mentions_versions(receiver: ast.AST) -> bool:
    text = _text(receiver)
    return "ProcedureVersion" in text or "versions" in text


def _status_value(call: ast.Call) -> ast.AST | None:
    for keyword in call.keywords:
        if keyword.arg == "status":
            return keyword.value
    return None


def _is_candidate(value: ast.AST) -> bool:
    return _text(value) in {"Status.CANDIDATE", "'candidate'", '"candidate"'}


def offences(source: str, module: str, *, package: bool = False) -> list[str]:
    """What in `source` (the module `module`) breaks the rules above, as `line: what`."""
    tree = ast.parse(source)
    found: list[str] = []
    services_names: set[str] = set()  # local names bound to the services package or a module of it
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(module, node, package=package)
            for alias in node.names:
                full = f"{target}.{alias.name}"
                if _is_services(target) and alias.name.startswith("_"):
                    found.append(f"{node.lineno}: imports {alias.name} from {target}")
                if _is_services(full):
                    services_names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_services(alias.name) and alias.asname:
                    services_names.add(alias.asname)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if (isinstance(node.value, ast.Name) and node.value.id in services_names) or _text(node.value) in {
                "library.services"
            }:
                found.append(f"{node.lineno}: reads {_text(node)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method, receiver = node.func.attr, node.func.value
            status = _status_value(node)
            if method in WRITE_METHODS and status is not None and _mentions_versions(receiver):
                if method == "update" or not _is_candidate(status):
                    found.append(f"{node.lineno}: writes a version's status: {_text(node)[:120]}")
            if method == "save" and "version" in _text(receiver).lower():
                for keyword in node.keywords:
                    if keyword.arg == "update_fields" and "'status'" in _text(keyword.value):
                        found.append(f"{node.lineno}: saves a version's status: {_text(node)[:120]}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ProcedureVersion":
            status = _status_value(node)
            if status is not None and not _is_candidate(status):
                found.append(f"{node.lineno}: creates a version with status {_text(status)}")
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if (
                        isinstance(sub, ast.Attribute)
                        and sub.attr == "status"
                        and "version" in _text(sub.value).lower()
                    ):
                        found.append(f"{node.lineno}: sets {_text(sub)}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            sql = " ".join(node.value.lower().split())
            if "update library_procedureversion" in sql and "status" in sql:
                found.append(f"{node.lineno}: SQL updating library_procedureversion's status")
    return found


def _checked_files() -> list[Path]:
    files = []
    for top in CHECKED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if SERVICES in path.parents or "migrations" in path.parts:
                continue
            files.append(path)
    return files


def test_no_module_outside_services_writes_a_version_status_or_imports_a_private_service_name():
    everything = []
    for path in _checked_files():
        module = _module_name(path)
        for offence in offences(path.read_text(), module, package=path.name == "__init__.py"):
            everything.append(f"{path.relative_to(ROOT)}:{offence}")
    assert everything == [], "\n".join(everything)


def test_the_services_package_exports_no_private_name():
    tree = ast.parse((SERVICES / "__init__.py").read_text())
    private = [
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if (alias.asname or alias.name).startswith("_")
    ]
    assert private == []
    import library.services as services

    assert all(not name.startswith("_") for name in services.__all__)
    assert all(hasattr(services, name) for name in services.__all__)


# ---------------------------------------------------------------------------------------------- the checker


@pytest.mark.parametrize(
    "source,module",
    [
        ("from library.services import _set_status", "reviews.views.x"),
        ("from ..services import _on_commit, audit", "library.agents.settings"),
        ("from ..services.locking import _lock_version", "library.api.views"),
        ("from library import services\nservices._decision(f)", "reviews.views.x"),
        (
            "from library.models import ProcedureVersion\nProcedureVersion.objects.filter(pk=1).update(status=S.ACTIVE)",
            "library.x",
        ),
        ("procedure.versions.filter(number=2).update(status='retired')", "library.x"),
        ("ProcedureVersion.objects.create(procedure=p, status=Status.ACTIVE)", "bench.seed"),
        ("ProcedureVersion(procedure=p, status=Status.RETIRED)", "bench.seed"),
        ("version.status = Status.ACTIVE", "library.x"),
        ("locked_version.save(update_fields=['status', 'status_reason'])", "library.x"),
        ("cursor.execute('UPDATE library_procedureversion SET status = %s')", "library.x"),
    ],
)
def test_the_checker_finds_each_kind_of_offence(source, module):
    assert offences(source, module), source


@pytest.mark.parametrize(
    "source,module",
    [
        ("from library.services import audit, version_approve", "reviews.views.x"),
        ("from library import services\nservices.version_approve(version=v, user=u)", "reviews.views.x"),
        ("ProcedureVersion.objects.filter(status=Status.ACTIVE).update(review_by=d)", "library.x"),
        ("ProcedureVersion.objects.create(procedure=p, status=Status.CANDIDATE)", "bench.seed"),
        ("delivery.status = 'failed'\ndelivery.save(update_fields=['status'])", "reviews.webhooks"),
        ("from ._private import x", "library.y"),
    ],
)
def test_the_checker_lets_what_is_allowed_pass(source, module):
    assert offences(source, module) == [], source
