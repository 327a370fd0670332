"""``python -m bench [name ...] [--flag value ...]``: run every benchmark, or the ones named.

Names are the module names in ``bench/`` that define a top-level ``run()`` (``jobs``,
``sessions``, ...); helper modules (``common``, ``fleet``, ``settings``, ...) define none and are
not listed. Everything from the first argument starting with ``-`` on is handed to each
benchmark's own ``main(argv)`` (a module with only ``run()`` is called without flags).
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path


def available() -> list[str]:
    """Benchmark modules found next to this file, so a new one needs no registration: those
    defining ``run`` at top level. Read, not imported (``urls`` would need Django configured)."""
    return sorted(
        path.stem for path in Path(__file__).parent.glob("*.py") if not path.stem.startswith("_") and defines_run(path)
    )


def defines_run(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return any(isinstance(node, ast.FunctionDef) and node.name == "run" for node in tree.body)


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """(benchmark names, flags for them): names come first, flags from the first ``-...`` on."""
    for index, arg in enumerate(argv):
        if arg.startswith("-"):
            return argv[:index], argv[index:]
    return argv, []


def main(argv: list[str] | None = None) -> int:
    names, flags = split_argv(sys.argv[1:] if argv is None else argv)
    known = available()
    unknown = [name for name in names if name not in known]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(known)}", file=sys.stderr)
        return 2
    status = 0
    for name in names or known:
        print(f"== bench.{name} ==", flush=True)
        module = importlib.import_module(f"bench.{name}")
        if hasattr(module, "main"):
            status = max(status, module.main(flags) or 0)
        else:  # a benchmark with only run() takes no flags
            module.run()
    return status


if __name__ == "__main__":
    sys.exit(main())
