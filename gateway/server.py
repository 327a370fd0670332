"""The MCP server: the SDK's low-level server with one handler per method, each asking who calls.

The HTTP view authenticates the Bearer key before the SDK sees the request and puts the principal
in ``PRINCIPAL`` (a context variable, so every task the SDK starts for the request inherits it).
Tool handlers are the synchronous services of the REST API, run in Django's thread for the request
(``sync_to_async``), so they use the request's database connection and transaction rules. Every
refusal of a tool, resource or prompt is audited (gateway/refusals.py), as the REST API audits its own.
"""

from __future__ import annotations

import functools
import json
import logging
from contextvars import ContextVar
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError as InvalidValue
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS
from pydantic import ValidationError

from agents.registries import listing
from agents.vocabulary import Registry
from gateway import completions, context, forwarding, governed, pins, reach, refusals, task_protocol, telemetry
from gateway.tools import TOOLS
from governance.kernel.exceptions import DomainError
from governance.kernel.json_guard import json_errors
from governance.kernel.principals import Principal

logger = logging.getLogger(__name__)

PRINCIPAL: ContextVar[Principal] = ContextVar("mcp_principal")


@functools.cache
def _definition(name: str) -> types.Tool:
    """A tool as MCP lists it; its JSON Schemas are built once per process (pydantic takes
    milliseconds per schema, which every tools/list would otherwise pay)."""
    tool = TOOLS[name]
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema(),
        output_schema=tool.output_schema(),
        annotations=types.ToolAnnotations(read_only_hint=tool.read_only, destructive_hint=False),
    )


def _tools_for(principal: Principal) -> list[types.Tool]:
    return [_definition(name) for name, tool in TOOLS.items() if principal.agent is not None or tool.read_only]


async def _upstream_tools(principal: Principal) -> list[tuple[forwarding.Grant, types.Tool]]:
    """Each granted upstream tool with the definition an operator approved (gateway/pins.py: a
    changed, new or flagged one is withheld); a server that cannot be reached lists nothing (and
    is logged), the others still do. Each server is asked once."""
    found = []
    listed: dict[int, dict[str, types.Tool]] = {}
    for grant in await sync_to_async(forwarding.grants)(principal):
        if grant.server.pk not in listed:
            try:
                tools = await reach.tools_of(grant.server)
                admitted = await sync_to_async(pins.admitted)(grant.server, tools)
            except Exception as exc:  # the lock too: a listing it cannot read shows nothing
                governed.unlisted(grant.server, exc)
                admitted = []
            listed[grant.server.pk] = {tool.name: tool for tool in admitted}
        if grant.tool in listed[grant.server.pk]:
            found.append((grant, listed[grant.server.pk][grant.tool]))
    return found


def _active_values(tools: list[types.Tool]) -> dict[Registry, list[str]]:
    """The active values of the registries the listed tools' arguments take (one query)."""
    wanted = {registry for tool in tools for registry, _ in TOOLS[tool.name].registry_fields}
    if not wanted:
        return {}
    return {registry: [e.value for e in entries if not e.retired] for registry, entries in listing(wanted).items()}


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    principal = PRINCIPAL.get()
    upstream_tools = [
        tool.model_copy(update={"name": grant.tool_id}) for grant, tool in await _upstream_tools(principal)
    ]
    platform = _tools_for(principal)
    active = await sync_to_async(_active_values)(platform)
    if active:  # the registries change while a process lives: their values are read at each listing
        platform = [
            tool.model_copy(update={"input_schema": TOOLS[tool.name].with_registry_values(tool.input_schema, active)})
            if TOOLS[tool.name].registry_fields
            else tool
            for tool in platform
        ]
    return types.ListToolsResult(tools=platform + upstream_tools)


def _refused_call(principal: Principal, name: str, message: str, refusal: str, **data: Any) -> types.CallToolResult:
    refusals.record(principal, method="tools/call", name=name, refusal=refusal, detail=message)
    return governed.tool_error(message, refusal=refusal, **data)


def _call(principal: Principal, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    tool = TOOLS.get(name)
    if tool is None or not any(t.name == name for t in _tools_for(principal)):
        return _refused_call(principal, name, f"No tool {name!r} for this key.", "NotGranted")
    # What PostgreSQL would refuse (NUL characters, non-finite numbers, deep nesting) is named
    # here, as the REST API's input guard names it, instead of failing in the database.
    # The output under audit may hold them: the contract validator records a violation (as REST).
    audited = (("arguments", "output"),) if name == "validate_output" else ()
    unstorable = json_errors(arguments, ["arguments"], numbers_at=audited)
    if unstorable:
        return governed.tool_error("The arguments cannot be stored; see errors.", errors=unstorable)
    try:
        data = tool.arguments.model_validate(arguments)
    except ValidationError as exc:
        errors = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
        return governed.tool_error("The arguments are invalid; see errors.", errors=errors)
    try:
        result = tool.run(principal, data)
    except DomainError as exc:
        return _refused_call(principal, name, exc.detail, type(exc).__name__, **exc.data())
    structured = tool.answer(result)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(structured))], structured_content=structured
    )


def handle_call(
    principal: Principal,
    name: str,
    arguments: dict[str, Any],
    meta: dict[str, Any],
    *,
    after_answer: bool = False,
) -> types.CallToolResult:
    """One ``tools/call``, in the caller's thread: an upstream tool governed (its outcome written
    after the answer when ``after_answer``, gateway/outcomes.py), a platform tool run. A failure
    of ours is a tool error that says only that it was logged."""
    try:
        if forwarding.split(name) is not None:
            return governed.answer(principal, name, arguments, meta, after_answer=after_answer)
        return _call(principal, name, arguments)
    except Exception:
        logger.exception("[mcp] tools/call %s failed", name)
        return governed.tool_error(governed.FAILED)


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = dict(params.arguments or {})
    return await sync_to_async(handle_call)(PRINCIPAL.get(), params.name, arguments, dict(params.meta or {}))


def _refused(principal: Principal, method: str, name: str, detail: str, refusal: str, **data: Any) -> MCPError:
    """An audited refusal of a resource or a prompt, as the protocol error the client gets."""
    refusals.record(principal, method=method, name=name, refusal=refusal, detail=detail)
    return MCPError(code=INVALID_PARAMS, message=detail, data={"refusal": refusal, **data})


async def list_resources(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    own = PRINCIPAL.get().agent is not None
    manifest = types.Resource(
        uri=context.MANIFEST_URI, name="manifest", description="Your active manifest.", mime_type="application/json"
    )
    return types.ListResourcesResult(resources=[manifest] if own else [])


async def list_resource_templates(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(
        uri_template=context.INJECTION_TEMPLATE,
        name="injection-block",
        description="Step 0 (seed 004): the injection block of a story; it never fails.",
        mime_type="text/markdown",
    )
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(
    ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    uri = str(params.uri)
    principal = PRINCIPAL.get()
    try:
        text, mime_type = await sync_to_async(context.read)(principal, uri)
    except DomainError as exc:
        # The error names the URI it answers (SEP-2164), as the conformance runner checks.
        refused = await sync_to_async(_refused)(
            principal, "resources/read", uri, exc.detail, type(exc).__name__, uri=uri
        )
        raise refused from exc
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text, mime_type=mime_type)])


async def list_prompts(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    argument = types.PromptArgument(name="sessionId", description="One of your sessions.", required=True)
    prompts = [
        types.Prompt(name=name, description=description, arguments=[argument])
        for name, (description, _) in context.PROMPTS.items()
    ]
    return types.ListPromptsResult(prompts=prompts)


async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> types.GetPromptResult:
    session_id = (params.arguments or {}).get("sessionId", "")
    principal = PRINCIPAL.get()
    try:
        text = await sync_to_async(context.session_prompt)(principal, params.name, session_id)
    except DomainError as exc:
        refused = await sync_to_async(_refused)(principal, "prompts/get", params.name, exc.detail, type(exc).__name__)
        raise refused from exc
    except InvalidValue as exc:  # a session id that is no session's
        detail = f"No session {session_id!r}."
        raise await sync_to_async(_refused)(principal, "prompts/get", params.name, detail, "NotFound") from exc
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
    return types.GetPromptResult(description=context.PROMPTS[params.name][0], messages=[message])


async def complete(ctx: ServerRequestContext[Any], params: types.CompleteRequestParams) -> types.CompleteResult:
    """Values for the argument a client's user is typing, from the caller's own sessions only."""
    principal, ref, argument = PRINCIPAL.get(), params.ref, params.argument
    if isinstance(ref, types.PromptReference):
        found = await sync_to_async(completions.for_prompt)(principal, ref.name, argument.name, argument.value)
    else:
        given = dict((params.context.arguments or {}) if params.context else {})
        found = await sync_to_async(completions.for_template)(principal, ref.uri, argument.name, argument.value, given)
    return types.CompleteResult(
        completion=types.Completion(values=found.values, total=found.total, has_more=found.has_more)
    )


async def set_logging_level(ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
    """Accepted (the SDK has checked the level's name) and kept nowhere: /mcp is stateless and sends
    no log notifications, so there is nothing for the level to filter. Clients of the handshake
    revisions set it after initialize; 2026-07-28 removed the method (the SDK refuses it there)."""
    return types.EmptyResult()


SERVER: Server[Any] = Server(
    "agent-governance",
    version="1",  # the API's version (controlplane/api.py); 2026-07-28 clients read it in each result's _meta
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_list_resource_templates=list_resource_templates,
    on_read_resource=read_resource,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_completion=complete,
)
# Re-provided as the SDK says for a method 2026-07-28 removed (its constructor argument is deprecated).
SERVER.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_logging_level)
# Inside the SDK's own span (its OpenTelemetryMiddleware comes first): what that span lacks, and
# the mcp.server.operation.duration metric (gateway/telemetry.py).
SERVER.middleware.append(telemetry.ServerTelemetry(PRINCIPAL))
# Approval-gated upstream calls as MCP tasks, for the clients that ask (2025-11-25).
task_protocol.install(
    SERVER,
    task_protocol.Tasks(
        sync_to_async(governed.call),
        lambda message, refusal, data: governed.tool_error(message, refusal=refusal, **data),
        PRINCIPAL.get,
    ),
)
