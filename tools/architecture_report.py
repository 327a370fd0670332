"""Architecture figures of one checkout, so that issue 35's closing note compares commits by
measurement rather than by reading.

Run it from the checkout to measure (the tool may live in another one, so an old commit is
measured by today's tool)::

    .venv/bin/python tools/architecture_report.py
    cd "$OLD_WORKTREE" && EMBEDDED_PGDATA="$REPO/var/pgdata" "$REPO/.venv/bin/python" \\
        "$REPO/tools/architecture_report.py"

What each figure means and how it is measured:

* Traces of two requests: ``POST /api/v1/jobs`` (an agent submits a job) and a reviewer's
  approval of a pending tool-call approval, as the inbox's Approve button posts it (htmx, to
  ``reviews:inbox-decide``). Each is made once with Django's test ``Client`` after a warm-up
  request of the same kind, so module imports and first-time caches are not counted, against a
  throwaway test database (``create_test_db`` / ``destroy_test_db``; the server is the embedded
  PostgreSQL, or ``DATABASE_URL``). The setup (the vlevel seed manifest loaded and active, its
  key, the pending approvals its tool calls open, a user with the Reviewer role) goes through the
  product's services, the tests' support helpers and factories. Celery tasks go to an in-memory
  broker, so nothing reaches a real queue.
  ``sys.setprofile`` sees every Python function call of the request's thread:

  - *product files*: the Python files of the product packages (``PRODUCT_PACKAGES``) with a
    function that ran;
  - *templates*: the distinct templates rendered (Django's ``template_rendered`` signal, includes
    too);
  - *hop*: a call into a function of one product file whose nearest product caller on the stack is
    in another product file; Django and library frames in between are transparent (the middleware
    reaching the view through Django's handler is a hop, as a reader following the request makes
    it too);
  - *longest chain*: the most hops on one call stack, with the files it goes through;
  - *edges*: the distinct (caller file, callee file) pairs of those hops.

* Import edges between packages, read from the import statements by the checkout's own
  ``tests/governance/test_architecture.py`` (``edges()``, ``cycles()``), against two layer maps:
  the checkout's own ``LAYERS`` (what its test enforced) and the target map, the ``LAYERS`` of the
  test next to this tool (issue 35's layers, so an old commit is held to the new order). An
  *upward edge* is a pair of packages where the importer's layer is not above the imported one's;
  each is given with its count of import statements (distinct file:line). *Package cycles* are the
  test's ``cycles()`` of the package graph; *module import cycles* are the groups of product
  modules that reach each other by imports (strongly connected components, so a tangle counts
  once however many elementary cycles it holds), imports in functions included as the test does.
* mypy baseline: the sum of the counts in ``tools/mypy-baseline.txt`` (errors tolerated today).
* Coverage: ``totals.percent_covered`` of ``var/coverage.json`` when ``make test`` wrote one.
* Module sizes: the ten largest product ``.py`` files by lines (migrations left out), and every
  function or method longer than 80 lines (``end_lineno - lineno + 1`` of its ``def``).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, cast

PRODUCT_PACKAGES = ("agents", "sessions", "memory", "gateway", "governance", "controlplane")
TOOL_ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE_TEST = Path("tests", "governance", "test_architecture.py")
LONG_FUNCTION = 80
LARGEST = 10
AGENT_ID = "agent.seo.vlevel"
# A tool of the vlevel seed manifest that requires a reviewer's approval for each call.
APPROVED_TOOL = f"/agents/{AGENT_ID}/tools/mcp__chrome-devtools__take_snapshot/calls"

State = tuple[str, tuple[str, ...]]  # (the nearest product file on the stack, the chain of hops to it)


# --- Static figures ---------------------------------------------------------------------------


def product_sources(root: Path) -> Iterator[Path]:
    """The product's Python files, migrations left out (they are history, not architecture)."""
    for package in PRODUCT_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" not in path.relative_to(root).parts:
                yield path


def module_sizes(root: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(the largest modules, the functions over LONG_FUNCTION lines), each as (lines, where)."""
    modules, functions = [], []
    for path in product_sources(root):
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(root))
        modules.append((len(text.splitlines()), where))
        for node in ast.walk(ast.parse(text, where)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > LONG_FUNCTION:
                    functions.append((length, f"{where}:{node.lineno} {node.name}"))
    return sorted(modules, reverse=True)[:LARGEST], sorted(functions, reverse=True)


def mypy_baseline(root: Path) -> int | None:
    """The number of mypy errors the checkout's baseline tolerates (each line starts with a count)."""
    baseline = root / "tools" / "mypy-baseline.txt"
    if not baseline.exists():
        return None
    return sum(int(line.split()[0]) for line in baseline.read_text().splitlines() if line.strip())


def coverage(root: Path) -> float | None:
    report = root / "var" / "coverage.json"
    return json.loads(report.read_text())["totals"]["percent_covered"] if report.exists() else None


def load_module(path: Path, name: str) -> ModuleType:
    """A module loaded from its file under a name of our own: the checkout's and the tool's
    architecture tests share a dotted name."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's groups of nodes that all reach each other, those of more than one node: each is
    one tangle of import cycles, whichever elementary cycle a search happens to name."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(n: str) -> None:
        index[n] = low[n] = len(index)
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if m not in index:
                visit(m)
                low[n] = min(low[n], low[m])
            elif m in stack:
                low[n] = min(low[n], index[m])
        if low[n] == index[n]:
            group = []
            while (m := stack.pop()) != n:
                group.append(m)
            if group:
                groups.append(sorted([n, *group]))

    for n in sorted(graph):
        if n not in index:
            visit(n)
    return sorted(groups)


def module_cycles(root: Path, reader: ModuleType) -> list[list[str]]:
    """Import cycles between product modules (imports in functions count, as in the layer test)."""
    paths = {reader.module_name(path): path for path in product_sources(root)}
    graph = {
        module: {target for _, target in reader.runtime_imports(ast.parse(path.read_text(), str(path)))}
        & (paths.keys() - {module})
        for module, path in paths.items()
    }
    return strongly_connected(graph)


def import_figures(root: Path) -> list[str]:
    """Cross-package import edges of the checkout under its own layer map and the target one."""
    own_test = root / ARCHITECTURE_TEST
    reader = load_module(own_test if own_test.exists() else TOOL_ROOT / ARCHITECTURE_TEST, "checkout_architecture")
    target = load_module(TOOL_ROOT / ARCHITECTURE_TEST, "target_architecture")
    found = reader.edges()
    statements = {where.split(" imports ")[0] for _, _, where in found}
    graph: dict[str, set[str]] = {}
    for src, dst, _ in found:
        graph.setdefault(src, set()).add(dst)
    cycles = reader.cycles(graph)
    lines = [f"  cross-package import statements: {len(statements)}; package cycles: {len(cycles)}"]
    lines += [f"    cycle {' -> '.join(cycle)}" for cycle in cycles]
    for title, layers in (("its own layer map", reader.LAYERS), ("the target layer map (issue 35)", target.LAYERS)):
        upward: dict[tuple[str, str], set[str]] = {}
        for src, dst, where in found:
            if layers[dst] >= layers[src]:
                upward.setdefault((src, dst), set()).add(where.split(" imports ")[0])
        lines.append(f"  upward package edges under {title}: {len(upward)}")
        lines += [f"    {src} -> {dst} ({len(where)} statements)" for (src, dst), where in sorted(upward.items())]
    tangles = module_cycles(root, reader)
    lines.append(
        f"  module import cycles: {len(tangles)} groups of modules that import each other, "
        f"{sum(map(len, tangles))} modules in them"
    )
    lines += [f"    {' <-> '.join(group)}" for group in tangles]
    return lines


# --- Request traces ---------------------------------------------------------------------------


@dataclass
class CallTrace:
    """What one request ran: product files, templates and the hops between product files."""

    root: Path
    files: set[str] = field(default_factory=set)
    edges: set[tuple[str, str]] = field(default_factory=set)
    longest: tuple[str, ...] = ()
    calls: int = 0
    templates: list[str] = field(default_factory=list)
    _known: dict[str, str | None] = field(default_factory=dict)
    _states: dict[FrameType, State] = field(default_factory=dict)

    def product_file(self, filename: str) -> str | None:
        """The checkout-relative path of a product source file, None for anything else."""
        if filename not in self._known:
            path = Path(filename)
            inside = path.is_relative_to(self.root) and path.relative_to(self.root).parts[0] in PRODUCT_PACKAGES
            self._known[filename] = str(path.relative_to(self.root)) if inside else None
        return self._known[filename]

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        """sys.setprofile's hook: each frame gets the nearest product file on its stack and the
        chain of hops that led there; a library frame passes its caller's on."""
        if event == "return":
            self._states.pop(frame, None)
            return
        if event != "call":
            return
        parent = self._states.get(frame.f_back) if frame.f_back is not None else None
        file = self.product_file(frame.f_code.co_filename)
        if file is None:
            if parent is not None:
                self._states[frame] = parent
            return
        self.calls += 1
        self.files.add(file)
        if parent is None:
            state: State = (file, (file,))
        elif parent[0] == file:
            state = parent
        else:
            state = (file, (*parent[1], file))
            self.edges.add((parent[0], file))
            if len(state[1]) > len(self.longest):
                self.longest = state[1]
        self._states[frame] = state

    def rendered(self, sender: Any, template: Any, **kwargs: Any) -> None:
        self.templates.append(template.name or "<string>")

    @contextmanager
    def recording(self) -> Iterator[None]:
        from django.test.signals import template_rendered

        template_rendered.connect(self.rendered)
        sys.setprofile(self.profile)
        try:
            yield
        finally:
            sys.setprofile(None)
            template_rendered.disconnect(self.rendered)

    def report(self, title: str, status: int) -> list[str]:
        templates = Counter(self.templates)
        hops = max(len(self.longest) - 1, 0)
        return [
            f"{title}: answered {status}",
            f"  product files executed: {len(self.files)}",
            *(f"    {file}" for file in sorted(self.files)),
            f"  templates rendered: {len(templates)} distinct, {len(self.templates)} renders",
            *(f"    {name} x{count}" for name, count in sorted(templates.items())),
            f"  hops: longest chain {hops}, distinct file-to-file call edges {len(self.edges)}, "
            f"product function calls {self.calls}",
            *(f"    {file}" for file in self.longest),
        ]


def traced(root: Path, title: str, request: Callable[[], Any], expected: int) -> list[str]:
    """One request under the profiler; an unexpected answer stops the report rather than measure
    an error path."""
    trace = CallTrace(root)
    with trace.recording():
        response = request()
    if response.status_code != expected:
        raise SystemExit(f"{title}: expected {expected}, got {response.status_code}: {response.content[:500]!r}")
    return trace.report(title, response.status_code)


def job_envelope(url: str) -> dict[str, Any]:
    """The smallest envelope the vlevel manifest admits (as bench/jobs.py sends)."""
    return {
        "intent": "seo_audit",
        "scope": {"entityType": "page"},
        "payload": {"urls": [url]},
        "context": {"source": "cron"},
    }


def request_traces(root: Path) -> list[str]:
    """Both traces, made in a test database created and destroyed here."""
    from django.contrib.auth.models import User
    from django.test import Client
    from django.urls import reverse

    from governance.reviews.models import ReviewItem
    from tests.factories.governance import UserFactory
    from tests.support.api import Api
    from tests.support.keys import issue_key
    from tests.support.manifests import load

    agent_api = Api(Client(), issue_key(agent=load(AGENT_ID)))
    browser = Client()
    # The factory is typed by the abstract model; what it makes is the project's User.
    browser.force_login(cast("User", UserFactory.create(username="rita", roles=["Reviewer"])))

    def submit(url: str) -> Any:
        return agent_api.post("/jobs", job_envelope(url))

    def pending_approval(url: str) -> int:
        asked = agent_api.post(APPROVED_TOOL, {"arguments": {"url": url}})
        assert asked.status_code == 202, asked.content
        return int(asked.json()["reviewItemId"])

    def approve(item_id: int) -> Callable[[], Any]:
        """The Approve button's htmx POST, with the content hash its row shows."""
        shown = ReviewItem.objects.get(pk=item_id).content_hash
        form = {"decision": "approve", "shown": shown, "comment": ""}
        url = reverse("reviews:inbox-decide", args=[item_id])
        return lambda: browser.post(url, form, headers={"HX-Request": "true"})

    warm_item, measured_item = (
        pending_approval("https://shop.example.com/a"),
        pending_approval("https://shop.example.com/b"),
    )
    assert submit("https://shop.example.com/warm-up").status_code == 201
    lines = traced(
        root, "POST /api/v1/jobs (an agent submits a job)", lambda: submit("https://shop.example.com/1"), 201
    )
    assert approve(warm_item)().status_code == 200
    lines += traced(
        root, "a reviewer approves a tool-call approval in the inbox (htmx POST)", approve(measured_item), 200
    )
    return lines


def with_test_database(root: Path) -> list[str]:
    """Django set up for the checkout (its settings module detected), the traces made in a test
    database of this process's own, everything the run wrote removed again."""
    has_project_package = (root / "controlplane" / "settings.py").exists()
    os.environ["DJANGO_SETTINGS_MODULE"] = "controlplane.settings" if has_project_package else "governance.settings"
    os.environ["CELERY_BROKER_URL"] = "memory://"  # tasks the requests queue stay in this process
    import django
    from django.conf import settings

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment, teardown_test_environment

    from governance.kernel import runtime

    scratch = Path(tempfile.mkdtemp(prefix="architecture-report-"))
    settings.METRICS_DIR = scratch  # as tests/conftest.py: no metric file in the checkout's var/
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(scratch)
    runtime.prepare()
    settings.VAR_DIR = scratch  # files written at run time (the demo credentials), as the tests do
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    setup_test_environment()
    database = settings.DATABASES["default"]
    database.setdefault("TEST", {})["NAME"] = f"test_{database['NAME']}_architecture_{os.getpid()}"
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        return request_traces(root)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()
        runtime.release()
        shutil.rmtree(scratch, ignore_errors=True)


# --- Report -----------------------------------------------------------------------------------


def commit_of(root: Path) -> str:
    return subprocess.run(
        ["git", "log", "-1", "--format=%h %ad %s", "--date=short"], cwd=root, capture_output=True, text=True
    ).stdout.strip()[:100]


def report(root: Path, *, traces: bool) -> str:
    modules, functions = module_sizes(root)
    baseline = mypy_baseline(root)
    covered = coverage(root)
    lines = [f"Architecture of {root} at {commit_of(root)}", ""]
    if traces:
        lines += [*with_test_database(root), ""]
    lines += ["Import edges between packages:", *import_figures(root), ""]
    lines.append(f"mypy baseline: {baseline if baseline is not None else 'no tools/mypy-baseline.txt'} errors")
    measured = f"{covered:.1f} %" if covered is not None else "not measured (make test writes var/coverage.json)"
    lines.append(f"line coverage: {measured}")
    lines += ["", f"Largest modules ({LARGEST}, lines, migrations left out):"]
    lines += [f"  {size:5d} {where}" for size, where in modules]
    lines.append(f"Functions over {LONG_FUNCTION} lines: {len(functions)}")
    lines += [f"  {size:5d} {where}" for size, where in functions]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", nargs="?", default=".", help="the checkout to measure (default: here)")
    parser.add_argument("--no-traces", action="store_true", help="static figures only (no database)")
    args = parser.parse_args(argv)
    root = Path(args.checkout).resolve()
    sys.path.insert(0, str(root))  # the checkout's packages, not the tool's
    print(report(root, traces=not args.no_traces))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
