"""What every benchmark shares: statistics, the database it prepares, where its numbers come
from, and how it writes and prints them. A helper module, not a benchmark (it has no ``run``).

Nothing here imports Django at module level: a benchmark chooses its settings and database
(``prepare_database``) before ``django.setup()``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"
SETTINGS = "bench.settings"
MANIFEST = BASE_DIR / "agents" / "manifests" / "agent.seo.vlevel.yaml"


# --- Statistics and threads ----------------------------------------------------------------------


def percentile(ordered: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of an already sorted list (no interpolation between samples)."""
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def div(a: float, b: float) -> float:
    """``a / b`` to 3 decimals; NaN when either side is missing (NaN) or ``b`` is zero."""
    return round(a / b, 3) if b and not math.isnan(a) and not math.isnan(b) else math.nan


def warmup_seconds(duration: float) -> float:
    """The unrecorded warm-up before each measure (connections, lazy imports, plan caches)."""
    return min(3.0, duration / 10)


def run_threads(threads: list[threading.Thread]) -> None:
    """Start them all, then wait for each; join() with a timeout stays interruptible by Ctrl-C."""
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():
            thread.join(0.2)


# --- Database ------------------------------------------------------------------------------------


def prepare_database(
    db_name: str, environ: dict[str, str] | None = None, check: Callable[[str], None] | None = None
) -> str:
    """Point ``bench.settings`` at ``db_name`` on the embedded PostgreSQL (``DATABASE_URL`` wins
    when set), set Django up in this process and migrate; returns where the database is.

    ``environ`` is set before ``django.setup()``; ``check`` gets the database name before anything
    is written to it and raises to refuse it.
    """
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS
    os.environ["EMBEDDED_DB_NAME"] = db_name
    os.environ.update(environ or {})
    import django

    from governance.kernel import runtime

    runtime.prepare()
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    name = connection.settings_dict["NAME"]
    if check is not None:
        check(name)
    call_command("migrate", interactive=False, verbosity=0)
    return f"{'DATABASE_URL' if os.environ.get('DATABASE_URL') else 'embedded'}: {name}"


# --- Where the numbers come from -----------------------------------------------------------------


def machine(database: str, load_before: tuple[float, ...], **versions: str) -> dict[str, Any]:
    """Where the numbers come from; the load averages flag a run that shared its cores.

    ``versions`` are what the caller also depends on (``gunicorn=package_version("gunicorn")``,
    ``postgres=...``), recorded after Django's, in the order given.
    """
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "django": package_version("django"),
        **versions,
        "git_commit": git_commit(),
        "database": database,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def cpu_model() -> str:
    """The processor, as Linux names it (with its family and model: two "Intel Xeon" differ)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor()
    fields = dict(line.split(":", 1) for line in info.split("\n\n")[0].splitlines() if ":" in line)
    fields = {key.strip(): value.strip() for key, value in fields.items()}
    return f"{fields.get('model name', '?')} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')})"


def package_version(name: str) -> str:
    """The installed version, or "not installed": recording where the numbers come from must
    never lose a run's measures (a measure that needs the package fails on its own, earlier)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def git_commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=BASE_DIR, capture_output=True, text=True, timeout=10)
    except OSError:
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


# --- Results -------------------------------------------------------------------------------------


def write_result(name: str, result: dict[str, Any]) -> Path:
    """``bench/results/<name>.json``; returns its path relative to the project."""
    path = RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return path.relative_to(BASE_DIR)


def publish(name: str, result: dict[str, Any], text: str = "") -> dict[str, Any]:
    """The end of every benchmark: results to ``bench/results/<name>.json``, the report and the
    targets on stdout."""
    path = write_result(name, result)
    if text:
        print(text)
    print_targets(result["targets"])
    print(f"written to {path}")
    return result


def print_targets(targets: dict[str, bool]) -> None:
    """One ``[met]`` / ``[MISSED]`` line per target: printed, never a failure."""
    for name, met in targets.items():
        print(f"[{'met' if met else 'MISSED'}] {name}")


# --- Command lines and configs -------------------------------------------------------------------


def csv_ints(text: str) -> tuple[int, ...]:
    """``"40,80,160"`` -> (40, 80, 160)."""
    return tuple(int(part) for part in text.split(",") if part.strip())


def csv_pairs(text: str) -> tuple[tuple[int, int], ...]:
    """``"24:128,32:200"`` -> ((24, 128), (32, 200))."""
    return tuple((int(a), int(b)) for a, b in (part.split(":") for part in text.split(",") if part.strip()))


def config_json(cfg: Any) -> dict[str, Any]:
    """A benchmark's dataclass config for its results, with its vector spec described in words."""
    out = asdict(cfg)
    out["spec"] = {**asdict(cfg.spec), "description": cfg.spec.describe()}
    return out


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM behaves like Ctrl-C, so the ``finally`` that stops a benchmark's server runs."""
    raise KeyboardInterrupt


def until_interrupted(measure: Callable[[], object]) -> int:
    """Run ``measure`` as a benchmark's ``main`` does: 0, or 130 once Ctrl-C or SIGTERM stopped it
    (its servers stopped by their own ``finally``)."""
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        measure()
    except KeyboardInterrupt:
        print("interrupted; server stopped", file=sys.stderr)
        return 130
    return 0
