"""The stdio commands a deployment allows upstream MCP servers to run, read from its configuration
(``GATEWAY_STDIO_COMMANDS``). No Django.

A command line typed into the admin ran, as the server's user, on the web hosts: whoever held the
Admin role could read the secret key. So the commands are the deployment's to name, like its
other programs, and an Admin only picks one by name. Each entry is::

    "<name>": {"argv": ["npx", "-y", "@supabase/mcp-server-supabase"], "env": ["SUPABASE_ACCESS_TOKEN"]}

``argv`` is run as it is (no shell); ``env`` names the variables of the worker's environment the
command gets, on top of the few every process needs (``PATH``, ``HOME``...), and nothing else of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,49}$")
VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
KEYS = frozenset({"argv", "env"})


@dataclass(frozen=True)
class StdioCommand:
    name: str
    argv: tuple[str, ...]
    env: tuple[str, ...] = ()


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and "\x00" not in value


def _entry_problems(name: Any, entry: Any) -> list[str]:
    where = f"GATEWAY_STDIO_COMMANDS[{name!r}]"
    if not isinstance(name, str) or not NAME.match(name):
        return [f"{where}: a name is lower-case letters, digits and dashes (at most 50)"]
    if not isinstance(entry, dict):
        return [f'{where}: an object, {{"argv": [...], "env": [...]}}']
    problems = [f"{where}: unknown key {key!r} (argv, env)" for key in sorted(set(entry) - KEYS)]
    argv = entry.get("argv")
    if not isinstance(argv, list) or not argv or not all(_text(part) for part in argv):
        problems.append(f"{where}.argv: a non-empty list of non-empty strings (the program, then its arguments)")
    names = entry.get("env", [])
    if not isinstance(names, list) or not all(isinstance(n, str) and VARIABLE.match(n) for n in names):
        problems.append(f"{where}.env: a list of environment variable names")
    return problems


def problems(document: Any) -> list[str]:
    """What is wrong with the configuration, one line per bad entry; empty when it is usable."""
    if not isinstance(document, dict):
        return ['GATEWAY_STDIO_COMMANDS: a JSON object of named commands, {"<name>": {"argv": [...]}}']
    return [problem for name, entry in document.items() for problem in _entry_problems(name, entry)]


def allowed(document: Any) -> dict[str, StdioCommand]:
    """The usable commands by name; a bad entry is left out (and reported by ``problems``)."""
    if not isinstance(document, dict):
        return {}
    return {
        name: StdioCommand(name, tuple(entry["argv"]), tuple(dict.fromkeys(entry.get("env", []))))
        for name, entry in document.items()
        if not _entry_problems(name, entry)
    }
