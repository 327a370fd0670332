"""What the product needs of pgvector, the extension behind every similarity search.

0.8.0 is the minimum: it is the first with iterative index scans (``hnsw.iterative_scan``), which
let a filtered HNSW search walk the graph on until it has the rows asked for; before it, a search
filtered by kind, model or subject can come back short. The embedded server ships 0.8.5; an
external server is checked by ``manage.py check --deploy`` (governance.W006).

No Django imports: the embedded server's start (governance/kernel/embedded_db.py) uses it before
Django is configured.
"""

from __future__ import annotations

import re

MINIMUM = "0.8.0"

# The version installed in the current database (None before CREATE EXTENSION), and the one the
# server's files would install or update to (None when pgvector is not on the server at all).
VERSIONS_SQL = (
    "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
    " (SELECT default_version FROM pg_available_extensions WHERE name = 'vector')"
)

_NUMBER = re.compile(r"\d+")


def parse(version: str) -> tuple[int, ...]:
    """``"0.10.1"`` as ``(0, 10, 1)``: compared as numbers, not text ("0.10" is newer than "0.8").
    A suffix on a part (``0.8.0-dev``) keeps the part's leading number."""
    parts = []
    for part in version.strip().split("."):
        found = _NUMBER.match(part)
        if found is None:
            break
        parts.append(int(found.group()))
    return tuple(parts)


def older(version: str, than: str) -> bool:
    return parse(version) < parse(than)


def problem(installed: str | None, available: str | None, minimum: str = MINIMUM) -> tuple[str, str] | None:
    """(what is wrong, what to do) when the database's pgvector is older than ``minimum``, or
    when the server cannot provide it; None when it is recent enough (or will be once the first
    migration runs ``CREATE EXTENSION vector``)."""
    if installed is not None and not older(installed, minimum):
        return None
    if installed is None and available is not None and not older(available, minimum):
        return None
    if available is None:
        return (
            "pgvector is not installed on the database server.",
            f"Install pgvector {minimum} or later on the server (its package, or build it), "
            "then run `manage.py migrate`.",
        )
    if installed is not None and not older(available, minimum):
        return (
            f"pgvector {installed} is installed in the database; {minimum} or later is needed "
            "(the first with iterative index scans).",
            f"The server has {available}: run `ALTER EXTENSION vector UPDATE;` in the database "
            "(as its owner or a superuser).",
        )
    installed_too = f" (the database has {installed})" if installed not in (None, available) else ""
    then = (
        "run `manage.py migrate` (its first migration creates the extension)"
        if installed is None
        else "run `ALTER EXTENSION vector UPDATE;` in the database (as its owner or a superuser)"
    )
    return (
        f"The database server's pgvector is {available}{installed_too}; {minimum} or later is needed "
        "(the first with iterative index scans).",
        f"Install pgvector {minimum} or later on the server, then {then}.",
    )
