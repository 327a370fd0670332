"""The packages form layers, read from the source's import statements (no Django needed).

The kernel (``governance.kernel``) is below everything and imports no product package; the
notifications every layer above announces its events to come next, then the governance services
every app calls (the reviewer inbox, the contract catalog); then
agents, then the apps built on agents (sessions, memory), then the MCP endpoint (``gateway``),
which calls every app's services; the project package (``controlplane``: settings, urls, the root
API, demo loading) sits on top and is the only one that imports every app.
An import against that order is a cycle waiting to happen, so the test names the offending line.

Imports under ``if TYPE_CHECKING:`` are left out: they are read by the type checker only and never
run. Imports inside functions are counted: they run.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("governance", "agents", "sessions", "memory", "gateway", "controlplane")
SUB_APPS = ("governance.kernel", "governance.notifications", "governance.reviews", "governance.contracts")
# Pure modules filed with the app that needed them first and used by lower layers too: they count
# as the kernel, so they stay free of product imports (the kernel's own test below holds them to it).
KERNEL_MODULES = (
    "sessions.providers.outbound",  # the outbound URL guard: provider calls and notification webhooks
)

# Lower number = lower layer. A package may import its own layer's package itself and lower layers.
LAYERS = {
    "governance.kernel": 0,
    "governance.notifications": 1,  # every layer above announces its events
    "governance.reviews": 2,
    "governance.contracts": 3,
    "governance": 4,  # the app's own modules, which gather its sub-packages' models, admin and tasks
    "agents": 5,
    "sessions": 6,
    "memory": 6,
    "gateway": 7,  # MCP: an edge over every app's services
    "controlplane": 8,  # the project package: settings, urls, celery, the root API, demo loading
}


def node(module: str) -> str | None:
    """The layer package a dotted module belongs to; None outside the product."""
    if any(module == pure or module.startswith(pure + ".") for pure in KERNEL_MODULES):
        return "governance.kernel"
    for sub_app in SUB_APPS:
        if module == sub_app or module.startswith(sub_app + "."):
            return sub_app
    top = module.split(".")[0]
    return top if top in PACKAGES else None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import that runs, in functions too."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            yield from (item for stmt in child.orelse for item in runtime_imports(stmt))
            continue
        if isinstance(child, ast.Import):
            yield from ((child.lineno, alias.name) for alias in child.names)
        elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
            yield child.lineno, child.module
            # ``from governance import kernel`` imports the package governance.kernel.
            yield from ((child.lineno, f"{child.module}.{alias.name}") for alias in child.names)
        yield from runtime_imports(child)


def edges() -> list[tuple[str, str, str]]:
    """(from layer, to layer, where) for every import between two different layer packages."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            source = module_name(path)
            for line, target in runtime_imports(ast.parse(path.read_text(), str(path))):
                src, dst = node(source), node(target)
                if src is not None and dst is not None and src != dst:
                    found.append((src, dst, f"{path.relative_to(ROOT)}:{line} imports {target}"))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary cycle through a back edge of a depth-first search (enough to name one)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(n: str, path: list[str]) -> None:
        state[n] = 1
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                found.append([*path[path.index(m) :], m])
            elif m not in state:
                visit(m, [*path, m])
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [n])
    return found


@pytest.fixture(scope="module")
def import_edges() -> list[tuple[str, str, str]]:
    return edges()


def test_every_product_module_belongs_to_a_layer() -> None:
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            assert node(module_name(path)) in LAYERS, path


def test_no_import_cycle_between_packages(import_edges: list[tuple[str, str, str]]) -> None:
    graph: dict[str, set[str]] = {}
    for src, dst, _ in import_edges:
        graph.setdefault(src, set()).add(dst)
    assert cycles(graph) == []


def test_imports_only_go_down_the_layers(import_edges: list[tuple[str, str, str]]) -> None:
    upward = [where for src, dst, where in import_edges if LAYERS[dst] >= LAYERS[src]]
    assert upward == []


def test_the_kernel_imports_no_product_package(import_edges: list[tuple[str, str, str]]) -> None:
    assert [where for src, _, where in import_edges if src == "governance.kernel"] == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The reader itself: a kernel module importing agents is seen, a type-only import is not."""
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from memory.models import Learning\n"
        "def f():\n    from agents import jobs\n"
    )
    assert [target for _, target in runtime_imports(tree)] == [
        "typing",
        "typing.TYPE_CHECKING",
        "agents",
        "agents.jobs",
    ]
    assert cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]


def readme_rows() -> dict[str, set[str]]:
    """Package -> the files and folders its row of README's architecture table names."""
    rows = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        match = re.match(r"\| `([a-z/]+)` \|(.*)\|\s*$", line)
        if match:
            rows[match.group(1)] = set(re.findall(r"`([a-z_/]+(?:\.py|/))`", match.group(2)))
    return rows


def test_the_readme_lists_every_module_of_every_package() -> None:
    """README's table names each module once it exists and never one that is gone, so a newcomer
    reading it finds the tree as it is."""
    rows = readme_rows()
    sub_apps = {package for package in rows if "/" in package}
    assert set(rows) == {
        "governance/kernel",
        "governance/notifications",
        "governance/reviews",
        "governance/contracts",
        *PACKAGES[1:],
        *sub_apps,
    }
    for package, listed in rows.items():
        folder = ROOT / package
        present = {p.name for p in folder.glob("*.py")} - {"__init__.py", "apps.py", "models.py"}
        present |= {
            f"{d.name}/"
            for d in folder.iterdir()
            if (d / "__init__.py").exists()
            and d.name not in {"migrations", "management", "templatetags", "models"}
            and f"{package}/{d.name}" not in rows
        }
        present |= {f"templatetags/{p.name}" for p in folder.glob("templatetags/*.py") if p.name != "__init__.py"}
        assert sorted(present - listed) == [], f"{package}: modules missing from README"
        assert sorted(listed - present) == [], f"{package}: README names modules that are gone"


def opened_kinds() -> dict[str, str]:
    """Every review kind code the product opens items of -> where: the ``kind=`` of each
    ``open_item(`` call, a literal or a name of the calling module (a dict subscripted by a
    variable stands for all its values)."""
    found: dict[str, str] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for call in (node for node in ast.walk(tree) if isinstance(node, ast.Call)):
                if getattr(call.func, "attr", getattr(call.func, "id", "")) != "open_item":
                    continue
                where = f"{path.relative_to(ROOT)}:{call.lineno}"
                (kind,) = [keyword.value for keyword in call.keywords if keyword.arg == "kind"]
                namespace = vars(importlib.import_module(module_name(path)))
                if isinstance(kind, ast.Constant):
                    codes = [kind.value]
                elif isinstance(kind, ast.Name):
                    codes = [namespace[kind.id]]
                elif isinstance(kind, ast.Subscript) and isinstance(kind.value, ast.Name):
                    codes = list(namespace[kind.value.id].values())
                else:
                    pytest.fail(f"{where}: name the review kind with a constant of the module")
                found.update((str(code), where) for code in codes)
    return found


def test_every_kind_the_product_opens_is_declared_by_its_app() -> None:
    """An item of an undeclared kind would show as a generic request, with no handler: the app
    that opens a kind declares it (governance.reviews.kinds) in its AppConfig.ready(). Unlike the
    layer tests, this one reads the modules' constants and the registry, so Django is set up."""
    from governance.reviews import kinds

    opened = opened_kinds()
    declared = {kind.code for kind in kinds.all()}
    assert {code: where for code, where in opened.items() if code not in declared} == {}
    assert sorted(declared - set(opened)) == [], "declared kinds nothing opens"


def test_the_registry_wiring_is_declared_filled_and_points_up() -> None:
    """Each store of the registry (governance/kernel/registry.py) is declared by the layer that
    reads it and filled, in an AppConfig.ready(), by its own layer or one above it: that is what
    lets a lower layer (or module) call up without importing. An empty store would fail at the
    first call that needs it, a store filled from below would be an import in disguise, and one
    filled outside ready() would depend on which module happened to be imported first. Django is
    set up here."""
    from governance.kernel.registry import STORES

    assert set(STORES) >= {"review_kinds", "job_memory", "session_memory", "platform_events", "job_finished"}
    for store in STORES.values():
        declared = node(store.declared_in)
        assert declared in LAYERS, f"{store.name} declared outside the product ({store.declared_in})"
        assert store.filled_from, f"{store.name} ({store.doc}) is never filled"
        for module in store.filled_from:
            assert module.endswith(".apps"), f"{store.name} filled from {module}, not from an AppConfig.ready()"
            assert LAYERS[node(module) or ""] >= LAYERS[declared], f"{store.name} filled from {module}, below it"


def test_no_product_code_is_named_by_a_settings_string() -> None:
    """Code reached through a settings string (``import_module(settings.X)``) is an import the
    layer test cannot see: the registry's stores replace them."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
                name = getattr(call.func, "attr", getattr(call.func, "id", ""))
                if name in {"import_module", "import_string"} and any(
                    isinstance(arg, ast.Attribute) and getattr(arg.value, "id", "") == "settings" for arg in call.args
                ):
                    found.append(f"{path.relative_to(ROOT)}:{call.lineno}")
    assert found == []
