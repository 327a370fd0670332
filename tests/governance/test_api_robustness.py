"""No endpoint answers 500 to bad input: every operation of the OpenAPI document, fed garbage,
answers a 4xx problem+json. New endpoints are covered as soon as they are mounted."""

from __future__ import annotations

import re

import pytest

from controlplane.api import api
from tests.factories.governance import recent_heartbeat
from tests.support.manifests import manifest_text

GARBAGE_BODIES: list[bytes] = [
    b"",
    b"null",
    b"[]",
    b'"a string"',
    b"12345678901234567890123456789",
    b'{"unexpected": {"deeply": [[[[{"nested": null}]]]]}}',
    b'{"agent_id": null, "name": 1e309}',
    b"\xff\xfe\x00 not utf-8",
    b"{" * 5000,
]


def _operations() -> list[tuple[str, str, bool]]:
    schema = api.get_openapi_schema(path_prefix="/api/v1")
    found = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            found.append((method, path, "requestBody" in operation))
    return found


OPERATIONS = _operations()


def _concrete(path: str, agent_id: str) -> str:
    return re.sub(r"\{[^}]+\}", lambda m: agent_id if m.group(0) == "{agent_id}" else "x", path)


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path"), [(m, p) for m, p, body in OPERATIONS if body])
@pytest.mark.parametrize("body", GARBAGE_BODIES, ids=range(len(GARBAGE_BODIES)))
def test_garbage_bodies_get_a_4xx_problem(admin_api, agent, method, path, body):
    url = _concrete(path, agent.agent_id)
    response = getattr(admin_api.client, method)(
        url, data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {admin_api.key}"
    )
    assert 400 <= response.status_code < 500, response.content[:500]
    assert response["Content-Type"] == "application/problem+json"


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path"), [(m, p) for m, p, _ in OPERATIONS])
def test_garbage_query_strings_and_path_parts_get_no_500(admin_api, method, path):
    recent_heartbeat()  # the plane is ready: readiness's own 503 is tested in test_health
    url = _concrete(path, "not a valid id ../%00") + "?limit=abc&offset=-1&q=%ff"
    response = getattr(admin_api.client, method)(
        url, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {admin_api.key}"
    )
    assert response.status_code < 500, response.content[:500]


@pytest.mark.django_db
def test_a_wrong_method_is_a_405_problem(client):
    response = client.delete("/api/v1/health")
    assert response.status_code == 405
    assert response["Content-Type"] == "application/problem+json"
    assert "GET" in response["Allow"]


# --- The six root causes schemathesis found (issue 12, section 5): each a 4xx problem naming the field


def _problem(response, status: int = 422) -> list:
    assert response.status_code == status, response.content[:800]
    assert response["Content-Type"] == "application/problem+json"
    return [error["loc"] for error in response.json()["errors"]]


@pytest.mark.django_db
def test_cause_1_a_nul_byte_in_a_text_field_filter_or_path_is_422_naming_it(admin_api):
    from agents.models import Agent

    before = Agent.objects.count()
    created = admin_api.post("/agents", {"agent_id": "agent.nul\x00", "name": "Nul"})
    assert _problem(created) == [["body", "agent_id"]]
    assert Agent.objects.count() == before
    assert _problem(admin_api.get("/jobs", {"intent": "seo\x00audit"})) == [["query", "intent"]]
    assert _problem(admin_api.get("/agents/agent%00.x")) == [["path", "agent_id"]]


@pytest.mark.django_db
def test_cause_2_a_nul_character_anywhere_in_a_jsonb_payload_is_422_with_its_path(vlevel_api):
    from agents.models import Job

    body = {
        "intent": "seo_audit",
        "scope": {"entityType": "page"},
        "context": {"source": "cron"},
        "payload": {"urls": [{"deep": ["ok", "b\x00d"]}]},
    }
    assert _problem(vlevel_api.post("/jobs", body)) == [["body", "payload", "urls", 0, "deep", 1]]
    keyed = vlevel_api.post("/jobs", {**body, "payload": {"k\x00": 1}})
    assert _problem(keyed) == [["body", "payload", "k\x00"]]
    assert not Job.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"offset": str(2**64)}, "offset"),
        ({"offset": str(2**63)}, "offset"),
        ({"offset": "-1"}, "offset"),
        ({"limit": str(2**64)}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"limit": "0"}, "limit"),
        ({"limit": "100000"}, "limit"),
    ],
)
@pytest.mark.parametrize("path", ["/agents", "/jobs", "/reviews", "/sessions/next", "/contracts"])
def test_cause_3_offset_or_limit_out_of_range_on_a_list_is_422(admin_api, path, query, field):
    if path == "/sessions/next":
        path = "/automations/provider-profiles"  # not paginated: the query guard still bounds it
    response = admin_api.get(path, query)
    if path == "/automations/provider-profiles":
        assert response.status_code < 500
        return
    assert ["query", field] in _problem(response)


def test_cause_3_list_bounds_are_documented_in_the_openapi():
    schema = api.get_openapi_schema(path_prefix="/api/v1")
    for path in ("/api/v1/jobs", "/api/v1/reviews", "/api/v1/contracts"):
        parameters = {p["name"]: p["schema"] for p in schema["paths"][path]["get"]["parameters"]}
        assert parameters["limit"]["maximum"] == 1000
        assert parameters["limit"]["minimum"] == 1
        assert parameters["offset"]["minimum"] == 0
        assert parameters["offset"]["maximum"] == 2**31 - 1


@pytest.mark.django_db
@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_cause_4_non_finite_numbers_in_a_json_body_are_422(vlevel_api, literal):
    from agents.models import Job

    raw = (
        '{"intent": "seo_audit", "scope": {"entityType": "page"}, "context": {"source": "cron"}, '
        f'"payload": {{"depth": [1, {literal}]}}}}'
    )
    assert _problem(vlevel_api.post("/jobs", raw=raw)) == [["body", "payload", "depth", 1]]
    assert not Job.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "segment",
    [
        {"type": "period", "value": "garbage"},
        {"type": "enrichment", "enrichmentType": "USE", "config": {"resource": "jobs", "period": "garbage"}},
        {"type": "enrichment", "enrichmentType": "nonsense"},
        {"type": "enrichment", "enrichmentType": "USE", "config": "{not json"},
        "not an object",
    ],
)
def test_cause_5_a_malformed_automation_seed_segment_is_422_with_its_path(vlevel_api, segment):
    from sessions.models import AISession, Automation

    messages = [{"text": "hello"}, {"segments": [{"type": "text", "text": "x"}, segment]}]
    body = {"name": "nightly", "trigger": "MANUAL", "messages": messages}
    locs = _problem(vlevel_api.post("/automations", body))
    assert locs[0][:5] == ["body", "messages", 1, "segments", 1]
    assert not Automation.objects.exists()
    assert not AISession.objects.filter(type="SEED").exists()


@pytest.mark.django_db
def test_cause_6_deeply_nested_yaml_front_matter_of_a_watch_note_is_422(agent_api):
    from memory.models import VeilleNote

    text = "---\ntitle: " + "[" * 20_000 + "\n---\nbody\n"
    response = agent_api.post("/memory/veille", raw=text, content_type="text/markdown")
    assert _problem(response)[0][0] == "body"
    assert not VeilleNote.objects.exists()


# --- Media types, database outages, the declared error responses


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "content_type", "body"),
    [
        ("/agents", "text/plain", '{"agent_id": "agent.a", "name": "A"}'),
        ("/agents", "application/x-www-form-urlencoded", "agent_id=agent.a&name=A"),
        ("/agents", "application/yaml", "agent_id: agent.a\nname: A\n"),
        ("/memory/veille", "application/xml", "<note/>"),
    ],
)
def test_a_body_of_a_media_type_the_operation_does_not_take_is_415(admin_api, path, content_type, body):
    from agents.models import Agent

    response = admin_api.post(path, raw=body, content_type=content_type)
    assert _problem(response, 415) == [["header", "Content-Type"]]
    assert not Agent.objects.filter(agent_id="agent.a").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", ["application/yaml", "text/yaml", "application/x-yaml"])
def test_the_manifest_put_still_takes_yaml(admin_api, content_type):
    response = admin_api.put(
        "/agents/agent.seo.vlevel/manifest", raw=manifest_text("agent.seo.vlevel"), content_type=content_type
    )
    assert response.status_code in {200, 201}, response.content[:500]


def test_a_database_outage_is_a_503_problem_with_retry_after(client, database_down):
    response = client.get("/api/v1/agents", HTTP_AUTHORIZATION="Bearer gov_op_0123456789ab_x")
    assert _problem(response, 503) == []
    assert int(response["Retry-After"]) > 0


def test_health_keeps_its_component_report_in_its_503_problem(client, database_down):
    response = client.get("/api/v1/health")
    assert _problem(response, 503) == [["database"], ["vector"]]
    body = response.json()
    assert (body["database"], body["vector"]) == ("error", "error")
    assert "broker" in body
    assert body["heartbeat"] == {"status": "unknown"}
    assert int(response["Retry-After"]) > 0


def test_every_operation_declares_its_problems_as_problem_json():
    schema = api.get_openapi_schema(path_prefix="/api/v1")
    schemas = schema["components"]["schemas"]
    problem_fields = {"type", "title", "status", "detail", "errors"}
    assert set(schemas["ProblemDetails"]["required"]) == problem_fields
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            responses = operation["responses"]
            assert {"403", "404", "422", "503"} <= set(responses), (method, path)
            if "requestBody" in operation:
                assert {"413", "415"} <= set(responses), (method, path)
            for status, response in responses.items():
                if int(status) >= 400:
                    assert list(response.get("content", {})) == ["application/problem+json"], (method, path, status)
                    name = response["content"]["application/problem+json"]["schema"]["$ref"].rpartition("/")[2]
                    assert problem_fields <= set(schemas[name]["required"]), (method, path, name)  # or an extension


def test_every_success_answer_is_a_named_schema_or_declared_text():
    """What a generated client returns: a model (a named schema, or a list of them), the text of a
    declared non-JSON media type, or nothing for a 204; never an anonymous object or an untyped body.
    Clients read the first media type an answer declares (a job artifact: Markdown, then JSON)."""
    schema = api.get_openapi_schema(path_prefix="/api/v1")
    untyped = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            for status, response in operation["responses"].items():
                if not status.startswith("2") or status == "204":
                    continue
                media_type, declared = next(iter((response.get("content") or {"(none)": {}}).items()))
                body = declared.get("schema", {})
                body = body.get("items", body) if body.get("type") == "array" else body
                named = "$ref" in body
                text = not media_type.endswith("json") and body.get("type") == "string"
                if not (named or text):
                    untyped.append(f"{method.upper()} {path} {status} {media_type}")
    assert untyped == []


def test_the_contract_report_lists_violations_not_error_bodies():
    schemas = api.get_openapi_schema(path_prefix="/api/v1")["components"]["schemas"]
    violations = schemas["ReportOut"]["properties"]["violations"]["items"]
    assert violations == {"$ref": "#/components/schemas/ContractViolation"}
    assert set(schemas["ContractViolation"]["required"]) == {"path", "code", "message"}


def test_the_clarifications_markdown_export_is_declared_as_markdown():
    schema = api.get_openapi_schema(path_prefix="/api/v1/")
    operation = next(
        methods["get"] for path, methods in schema["paths"].items() if path.endswith("/clarifications/{story}/markdown")
    )
    assert list(operation["responses"]["200"]["content"]) == ["text/markdown"]
