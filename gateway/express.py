"""The express lane of ``/mcp``: a ``tools/call`` answered in the request's thread.

Tool calls are most of what agents send, and the SDK's transport made each pay for a session
manager, an event loop, memory streams and a hop to a thread for every database step, several
milliseconds before any check ran. A request that is plainly one call, exactly as the SDK's
transport would accept it (``recognise``), is answered here: the same handler (gateway/server.py
``handle_call``: an upstream tool governed, a platform tool run), the same JSON-RPC answer, the
same telemetry. Anything else goes to the SDK unchanged and is answered as before: other methods,
a batch, a task-augmented call, a request the transport would refuse (its headers, its JSON), a
session id, and the 2026-07-28 revision (single-exchange requests the SDK serves its own way).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from gateway import server, telemetry
from governance.kernel.principals import Principal

_PARAMS = frozenset({"name", "arguments", "_meta"})


@dataclass(frozen=True)
class Call:
    """One ``tools/call`` as the request holds it."""

    request_id: str | int
    name: str
    arguments: dict[str, Any]
    meta: dict[str, Any]
    protocol_version: str


def _accepts_json(request: HttpRequest) -> bool:
    """The Accept header admits a JSON answer (the SDK's rule in JSON-response mode)."""
    kinds = {part.split(";")[0].strip().lower() for part in request.headers.get("Accept", "").split(",")}
    return bool(kinds & {"application/json", "application/*", "*/*"})


def _transport_admits(request: HttpRequest, security: TransportSecuritySettings) -> bool:
    """What the SDK's transport checks before reading a message: a JSON body, a handshake
    revision named, no session to look up, and the Host and Origin it allows (DNS rebinding)."""
    if request.method != "POST" or request.headers.get("Mcp-Session-Id"):
        return False
    if request.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":  # as exact as the SDK
        return False
    if request.headers.get("MCP-Protocol-Version") not in HANDSHAKE_PROTOCOL_VERSIONS or not _accepts_json(request):
        return False
    guard = TransportSecurityMiddleware(security)
    return guard._validate_host(request.headers.get("Host")) and guard._validate_origin(request.headers.get("Origin"))


def recognise(request: HttpRequest, body: bytes, security: TransportSecuritySettings) -> Call | None:
    """The ``tools/call`` the request is, or None for anything the SDK is to answer."""
    if not _transport_admits(request, security):
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "tools/call":
        return None
    request_id, params = message.get("id"), message.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)) or not isinstance(params, dict):
        return None
    name, arguments, meta = params.get("name"), params.get("arguments", {}), params.get("_meta", {})
    if set(params) - _PARAMS or not isinstance(name, str):
        return None
    if set(message) - {"jsonrpc", "id", "method", "params"}:
        return None
    if not isinstance(arguments, dict) or not isinstance(meta, dict):
        return None
    return Call(request_id, name, arguments, meta, str(request.headers["MCP-Protocol-Version"]))


def answer(principal: Principal, call: Call) -> HttpResponse:
    """The call made (an upstream tool's governed, forwarded and logged) and its JSON-RPC answer
    (200, as the SDK's). A governed call's outcome is written by the process's writer
    (gateway/outcomes.py), not before the answer."""
    result = telemetry.served_call(
        principal,
        call.name,
        call.protocol_version,
        call.request_id,
        call.meta,
        lambda: server.handle_call(principal, call.name, call.arguments, call.meta, after_answer=True),
    )
    wire = {
        "jsonrpc": "2.0",
        "id": call.request_id,
        # Shaped for the client's revision as the SDK shapes it (no resultType before 2026-07-28).
        "result": methods.serialize_server_result(
            "tools/call", call.protocol_version, result.model_dump(by_alias=True, mode="json", exclude_none=True)
        ),
    }
    body = json.dumps(wire, separators=(",", ":"), ensure_ascii=False)
    return HttpResponse(body, content_type="application/json")
