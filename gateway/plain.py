"""Plain JSON-RPC to a stateless Streamable HTTP upstream, from the caller's own thread.

The SDK's client session (gateway/upstream.py) costs a governed call a hop to the pool's event
loop and the session's streams, about half a millisecond over one HTTP POST. An upstream that
keeps no session (its ``initialize`` answer names no ``Mcp-Session-Id``) needs none of it: each
``tools/call`` is one POST on a kept-alive connection of the calling thread, to the addresses the
outbound guard checked (sessions/providers/outbound.py), never to a second resolution of the name.
The answer is read as the SDK reads it (a JSON body or an event stream), its result checked
against the tool's output schema as the SDK checks it, and the request has the same CLIENT span
and duration (gateway/telemetry.py), the trace context in its ``_meta``.

An upstream that keeps sessions, or whose handshake failed, is left to the SDK's session:
``call`` answers None before anything is sent, as it does when a connection cannot be opened.
Once a request is sent, its failure is the call's (nothing is sent twice).
"""

from __future__ import annotations

import http.client
import itertools
import json
import select
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from opentelemetry.propagate import inject

from gateway import telemetry
from sessions.providers import outbound

if TYPE_CHECKING:
    from gateway.upstream import Address

CONNECT_TIMEOUT = 5.0
IDLE_REUSE = 2.0  # a connection idle longer is opened anew (servers close idle ones after ~5 s)
_ACCEPT = "application/json, text/event-stream"
_CLIENT_INFO = {"name": "agent-governance-gateway", "version": "1"}


@dataclass(frozen=True)
class Handshake:
    """What an upstream said at ``initialize``: its revision, and where it may be reached."""

    protocol_version: str
    target: outbound.Target
    token: str


_STATEFUL = "stateful"  # the upstream keeps sessions: the SDK's session calls it
_handshakes: dict[Address, Handshake | str] = {}
_lock = threading.Lock()
_local = threading.local()
_ids = itertools.count(1)


class _Connection:
    """A kept-alive connection of one thread to one upstream."""

    def __init__(self, target: outbound.Target, timeout: float) -> None:
        self.http = outbound.connection(target, CONNECT_TIMEOUT)
        self.timeout = timeout
        self.used = 0.0

    def fresh(self) -> bool:
        """Open and not closed by the server meanwhile (an idle connection the server dropped
        reads as ready: the request would fail after being sent, so it is never reused)."""
        sock = self.http.sock
        if sock is None or time.monotonic() - self.used > IDLE_REUSE:
            return False
        readable, _, _ = select.select([sock], [], [], 0)
        return not readable

    def open(self) -> None:
        self.http.close()
        self.http.connect()
        assert self.http.sock is not None
        self.http.sock.settimeout(self.timeout)


def _connection(address: Address, target: outbound.Target, timeout: float) -> _Connection:
    kept: dict[Address, _Connection] = _local.__dict__.setdefault("connections", {})
    connection = kept.get(address)
    if connection is None:
        connection = kept[address] = _Connection(target, timeout)
    if not connection.fresh():
        connection.open()  # OSError here: nothing was sent
    return connection


def _headers(token: str, protocol_version: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": _ACCEPT}
    if protocol_version:
        headers["MCP-Protocol-Version"] = protocol_version
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _answer(response: http.client.HTTPResponse, request_id: int) -> dict[str, Any]:
    """The JSON-RPC response to ``request_id``: the body, or the event of the stream that holds it
    (notifications before it are skipped: a stateless server has no channel for their answers)."""
    if response.status != 200:
        body = response.read(2000)
        raise MCPError(code=-32603, message=f"the upstream answered HTTP {response.status}: {body[:200]!r}")
    if (response.getheader("Content-Type") or "").startswith("text/event-stream"):
        data: list[str] = []
        while line := response.readline():
            text = line.decode("utf-8").rstrip("\r\n")
            if text.startswith("data:"):
                data.append(text[5:].removeprefix(" "))
            elif not text and data:
                message = json.loads("\n".join(data))
                data = []
                if isinstance(message, dict) and message.get("id") == request_id:
                    response.read()  # the rest of the stream, so the connection can be kept
                    return message
        raise MCPError(code=-32000, message="the upstream's event stream ended without an answer")
    message = json.loads(response.read())
    if not isinstance(message, dict) or message.get("id") != request_id:
        raise MCPError(code=-32603, message="the upstream answered another request")
    return message


def _exchange(connection: _Connection, path: str, headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    connection.http.request("POST", path, json.dumps(body), headers)
    response = connection.http.getresponse()
    try:
        return _answer(response, body["id"])
    finally:
        connection.used = time.monotonic()
        if response.will_close:
            connection.http.close()


def _handshake(address: Address) -> Handshake | str:
    """``initialize`` on a connection of its own: the upstream's revision, or ``_STATEFUL``."""
    target = outbound.check(address.url, internal=address.internal)
    token = address.secret()
    connection = outbound.connection(target, CONNECT_TIMEOUT)
    try:
        request = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE_PROTOCOL_VERSIONS[-1],
                "capabilities": {},
                "clientInfo": _CLIENT_INFO,
            },
        }
        connection.request("POST", target.path or "/", json.dumps(request), _headers(token, None))
        response = connection.getresponse()
        session = response.getheader("Mcp-Session-Id")
        answer = _answer(response, 0)
        if session or "result" not in answer:
            return _STATEFUL
        version = str(answer["result"].get("protocolVersion", ""))
        if version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return _STATEFUL
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        connection.request("POST", target.path or "/", json.dumps(note), _headers(token, version))
        connection.getresponse().read()
        return Handshake(version, target, token)
    finally:
        connection.close()


def _agreed(address: Address) -> Handshake | None:
    with _lock:
        known = _handshakes.get(address)
    if known is None:
        try:
            known = _handshake(address)
        except Exception:
            return None  # the SDK's session tries, and reports what fails
        with _lock:
            _handshakes[address] = known
    return known if isinstance(known, Handshake) else None


def forget(address: Address | None = None) -> None:
    """Shake hands again at the next call of ``address`` (every upstream's when None)."""
    with _lock:
        if address is None:
            _handshakes.clear()
        else:
            _handshakes.pop(address, None)


_validators: dict[str, Draft202012Validator] = {}


def _check_output(tool: types.Tool | None, result: types.CallToolResult) -> None:
    """The SDK's own check of a result against the tool's declared output schema (RuntimeError)."""
    if tool is None or tool.output_schema is None or result.is_error:
        return
    schema = tool.output_schema
    if result.structured_content is None:
        raise RuntimeError(f"Tool {tool.name} has an output schema but did not return structured content")
    key = json.dumps(schema, sort_keys=True)
    validator = _validators.get(key) or _validators.setdefault(key, Draft202012Validator(schema))
    error = best_match(validator.iter_errors(result.structured_content))
    if error is not None:
        raise RuntimeError(f"Invalid structured content returned by tool {tool.name}: {error}") from error


def call(
    address: Address, tool: str, arguments: dict[str, Any], listed: types.Tool | None, timeout: float
) -> types.CallToolResult | None:
    """``tool`` called with one POST, or None (nothing sent) when the SDK's session is to call it."""
    agreed = _agreed(address)
    if agreed is None:
        return None
    try:
        connection = _connection(address, agreed.target, timeout)
    except OSError:
        forget(address)
        return None
    with telemetry.client_span("tools/call", address.peer(), agreed.protocol_version, tool=tool) as observed:
        meta: dict[str, Any] = {}
        inject(meta)  # this span is the upstream's parent
        request = {
            "jsonrpc": "2.0",
            "id": next(_ids),
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, **({"_meta": meta} if meta else {})},
        }
        try:
            headers = _headers(agreed.token, agreed.protocol_version)
            message = _exchange(connection, agreed.target.path or "/", headers, request)
        except BaseException:
            connection.http.close()
            raise
        if "error" in message:
            error = types.ErrorData.model_validate(message["error"])
            raise MCPError(code=error.code, message=error.message, data=error.data)
        payload = message.get("result")
        if not isinstance(payload, dict) or payload.get("resultType", "complete") != "complete":
            raise RuntimeError(f"The upstream's answer to {tool} is not a complete tool result")
        result = types.CallToolResult.model_validate(payload)
        _check_output(listed, result)
        observed.result = result
        return result
