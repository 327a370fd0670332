"""Log formatters: ``[module] short_msg: details`` for people, one JSON object per line for machines.

Every line also says which request, task and trace it belongs to: ``ContextFilter`` (on the console
handler, settings.LOGGING) adds what the ``context`` variable holds (the request id the middleware
gave the request, the job it is about, the Celery task it runs in, the request that queued that
task) and, with tracing on (governance/kernel/tracing.py), the current trace and span ids. The text
format shows them at the end of the line, the JSON one as fields.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from types import MappingProxyType

_RESERVED = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}

# What the current request or task is: request_id, job_id, job_trace_id, agent_id, task_id.
context: ContextVar[Mapping[str, str]] = ContextVar("log_context", default=MappingProxyType({}))
# The keys a task inherits from whoever queued it (its own task_id is its own).
CARRIED = ("request_id", "job_id", "job_trace_id", "agent_id")
# An X-Request-ID a client sends is kept only if it is a short token: it ends up in every line.
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
# The text format's short names, in the order shown.
_TEXT_LABELS = {"request_id": "request", "task_id": "task", "job_id": "job", "trace_id": "trace"}

_trace_ids: Callable[[], tuple[str, str] | None] | None = None


def request_id(sent: str | None) -> str:
    """The id of a request: the client's X-Request-ID when it is a short safe token (so a proxy's
    id follows the request through), else a new one."""
    if sent and _SAFE_REQUEST_ID.fullmatch(sent):
        return sent
    return uuid.uuid4().hex


# A subject's key in a route (/memory/subjects/<key>/..., the API's and the pages'): a person's name.
_SUBJECT_ROUTE = re.compile(r"(/memory/subjects/)[^/?#]+")


def loggable_path(path: str) -> str:
    """A request path as logs may keep it: no query string (search text, filters), and
    ``{subject}`` in place of a subject's key on subject routes. Logs outlive an erasure."""
    return _SUBJECT_ROUTE.sub(r"\1{subject}", path.split("?", 1)[0].split("#", 1)[0])


def loggable_url(url: str) -> str:
    """A full URL (a Referer) as logs may keep it: the same rules as ``loggable_path``."""
    return loggable_path(url)


def bind(**values: str) -> None:
    """Add to the current context (the middleware resets it at the end of the request)."""
    context.set({**context.get(), **values})


def use_trace_ids(source: Callable[[], tuple[str, str] | None]) -> None:
    """Tracing's (trace id, span id) of the current span, or None outside one."""
    global _trace_ids
    _trace_ids = source


class ContextFilter(logging.Filter):
    """Adds the context's ids to every record (never over a field the call itself passed)."""

    def filter(self, record: logging.LogRecord) -> bool:
        fields = dict(context.get())
        ids = _trace_ids() if _trace_ids is not None else None
        if ids is not None:
            fields["trace_id"], fields["span_id"] = ids
        for key, value in fields.items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        ids = " ".join(
            f"{label}={value}" for key, label in _TEXT_LABELS.items() if (value := getattr(record, key, None))
        )
        return f"{line} [{ids}]" if ids else line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        payload.update({key: _loggable(value) for key, value in vars(record).items() if key not in _RESERVED})
        if record.exc_info:
            payload["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


def _loggable(value: object) -> object:
    """An extra field as a log line may keep it: a request (Django's ``log_response`` attaches it,
    and its repr carries the query string) becomes its method and loggable path."""
    path, method = getattr(value, "path", None), getattr(value, "method", None)
    if isinstance(path, str) and isinstance(method, str) and hasattr(value, "META"):
        return f"{method} {loggable_path(path)}"
    return value
