"""Typed readers for settings that come from the environment (12-factor).

Each reader accepts ``NAME_FILE`` as an alternative to ``NAME`` so secrets can come from mounted
files (Docker/Kubernetes secrets) instead of the process environment.
"""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ValueError):
    """A setting has a value the project cannot use."""


def load_dotenv(path: Path) -> None:
    """Read ``KEY=value`` lines from ``path`` if it exists; the real environment wins."""
    if not path.is_file():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.removeprefix("export ").split("=", 1)
        os.environ.setdefault(key.strip(), value.strip().strip("'\""))


def string(name: str, default: str = "") -> str:
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        return Path(file_path).read_text(encoding="utf-8").strip()
    return os.environ.get(name, default)


def boolean(name: str, default: bool = False) -> bool:
    raw = string(name, "").strip().lower()
    if not raw and name not in os.environ:
        return default
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def integer(name: str, default: int) -> int:
    raw = string(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name}={raw!r} is not an integer") from exc


def fraction(name: str, default: float) -> float:
    """A share in (0, 1]: a recall target of 0 or 95 is a typo, and must stop the start."""
    raw = string(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ConfigError(f"{name}={raw!r} is not a number") from exc
    if not 0 < value <= 1:
        raise ConfigError(f"{name}={raw!r} must be above 0 and at most 1")
    return value


_MEMORY_SIZE = re.compile(r"[1-9][0-9]*(kB|MB|GB|TB)")


def memory_size(name: str, default: str = "") -> str:
    """A PostgreSQL memory size (``512MB``, ``4GB``), or ``default`` when unset. It is written into the
    server's configuration, so anything else (a bare number PostgreSQL would read as 8 kB pages, a
    second setting after a newline) stops the start."""
    raw = string(name, "").strip()
    if not raw:
        return default
    if not _MEMORY_SIZE.fullmatch(raw):
        raise ConfigError(f"{name}={raw!r} is not a memory size (a whole number and kB, MB, GB or TB: 4GB)")
    return raw


def json_document(name: str, default: object = None) -> object:
    """A JSON document, or ``default`` when unset. Only its syntax is checked here: what it must
    hold is the reading app's to say, in a system check that names the bad entry."""
    raw = string(name, "").strip()
    if not raw:
        return default
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} is not valid JSON: {exc}") from exc


def listing(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in string(name, default).split(",") if item.strip()]


def database_from_url(url: str) -> dict[str, Any]:
    """Django DATABASES entry for a ``postgres://`` / ``postgresql://`` URL.

    A socket directory may be given as ``?host=/path`` (libpq style) or URL-encoded in the host part.
    Other query parameters (``sslmode``, ...) are passed through to libpq.
    """
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ConfigError(f"DATABASE_URL scheme {parts.scheme!r} is not supported: PostgreSQL only")
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    host = query.pop("host", None) or unquote(parts.hostname or "")
    port = query.pop("port", None) or (str(parts.port) if parts.port else "")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": port,
        "OPTIONS": query,
    }


def redis_answers(host: str = "127.0.0.1", port: int = 6379, timeout: float = 0.3) -> bool:
    """True when a Redis server answers PING on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False
