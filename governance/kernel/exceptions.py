"""Domain errors raised by services. The API maps each to one HTTP status (controlplane/api.py);
services never speak HTTP."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra

    def data(self) -> dict[str, Any]:
        """What a caller is told besides ``detail`` (the MCP refusals carry it)."""
        return dict(self.extra)


class Conflict(DomainError):
    """The request is well formed but the current state refuses it (409)."""


class Unauthorized(DomainError):
    """The caller did not prove who it is: a request signature that is missing or wrong (401)."""


class Forbidden(DomainError):
    """The caller is known but may not do this (403)."""


class NotFound(DomainError):
    """No such object, or one the caller may not know exists (404). ``hidden``: it does exist,
    outside the caller's reach; the caller is told word for word what a missing one tells, and
    the edge audits the attempt as a refusal (an attribute, not a subclass, whose name would
    reach an MCP caller)."""

    hidden = False


class RateLimited(DomainError):
    """Too many calls; ``retry_after`` seconds until the next one is allowed (429)."""

    def __init__(self, detail: str, retry_after: int, **extra: Any) -> None:
        super().__init__(detail, **extra)
        self.retry_after = retry_after

    def data(self) -> dict[str, Any]:
        return {**self.extra, "retryAfter": self.retry_after}


class Unavailable(DomainError):
    """A dependency (the embedding backend, ...) cannot answer now (503, with Retry-After)."""

    def __init__(self, detail: str, retry_after: int = 30, **extra: Any) -> None:
        super().__init__(detail, **extra)
        self.retry_after = retry_after

    def data(self) -> dict[str, Any]:
        return {**self.extra, "retryAfter": self.retry_after}


class InvalidInput(DomainError):
    """Input that passed the schema but breaks a rule (422). ``errors`` carry a ``loc`` each."""

    def __init__(self, detail: str, errors: list[dict[str, Any]], **extra: Any) -> None:
        super().__init__(detail, **extra)
        self.errors = errors

    def data(self) -> dict[str, Any]:
        return {**self.extra, "errors": self.errors}

    def summary(self) -> str:
        """One line for a command's output: the detail, then each error at its dotted path."""
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in self.errors)
        return f"{self.detail} {details}".strip()
