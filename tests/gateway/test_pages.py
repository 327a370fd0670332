"""The gateway's operator pages: who may read them, upstream health told by a real upstream, the
grants and calls of one agent, the filtered call log and its CSV, the per-tool report, and that
each page costs the same number of queries however many calls the log holds."""

from __future__ import annotations

import csv
import io
import re
import socket
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from datetime import time as clock
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent
from agents.registry import load_manifest
from gateway import health
from gateway.models import GatewayCall, UpstreamServer
from governance.kernel.principals import SYSTEM
from tests.factories.agents import AgentFactory
from tests.factories.gateway import GatewayCallFactory, UpstreamServerFactory
from tests.factories.governance import ContractFactory, UserFactory
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.processes import free_port
from tests.support.upstream import upstream_server

HTMX = {"HTTP_HX_REQUEST": "true"}
SQL = "mcp__supabase__execute_sql"
SECRET = "upstream-secret-value"


def every_page() -> list[str]:
    return [
        reverse("gateway:servers"),
        reverse("gateway:calls"),
        reverse("gateway:calls-csv"),
        reverse("gateway:tools"),
        reverse("gateway:agent", args=["agent.seo.vlevel"]),
    ]


def html_of(client: Any, url: str, params: dict[str, Any] | None = None, **extra: Any) -> str:
    response = client.get(url, params or {}, **extra)
    assert response.status_code == 200, url
    return response.content.decode()


def stats(html: str) -> dict[str, str]:
    """The figures of a stats list, by label."""
    found = re.findall(r'<span class="stat-value">(.*?)</span><span class="stat-label">(.*?)</span>', html, re.S)
    return {label: re.sub(r"<[^>]+>|\s+", " ", value).strip() for value, label in found}


def section_of(html: str, server: str) -> str:
    """The card of one upstream server on the servers page."""
    cards = html.split('<section class="card section upstream"')[1:]
    (card,) = [card for card in cards if f"<code>{server}</code></h2>" in card]
    return card


def rows_of(html: str) -> list[str]:
    """The body rows of the first call table."""
    body = html.split('<table class="list compact gateway-calls">', 1)[1].split("</tbody>", 1)[0]
    return body.split("<tr>")[2:]


def read_csv(response: Any) -> list[dict[str, str]]:
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def at(days_ago: int) -> datetime:
    """Just after the start of a local day: in the past, and on that day whatever the hour."""
    day = timezone.localdate() - timedelta(days=days_ago)
    return timezone.make_aware(datetime.combine(day, clock(0, 0, 1)))


def closed_url() -> str:
    """An address where nothing listens: connecting is refused at once."""
    return f"http://127.0.0.1:{free_port()}/mcp"


@pytest.fixture
def supabase(db) -> UpstreamServer:
    return UpstreamServerFactory.create(name="supabase", url=closed_url())


@pytest.fixture
def vlevel_with_grants(db) -> Agent:
    """agent.seo.vlevel as seed 001 ships it, its SQL tool also behind approval and a contract."""
    ContractFactory(name="sql_rows")
    text = manifest_text("agent.seo.vlevel").replace(
        "      rate_limit: 100", "      rate_limit: 100\n      requires_approval: true\n      contract: sql_rows"
    )
    return load_manifest(text, actor=SYSTEM)[0].agent


@pytest.fixture
def silent_upstream() -> Iterator[str]:
    """A server that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"


def only_permissions(username: str, *codenames: str) -> Any:
    user = UserFactory.create(username=username)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


# --- Access --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_page_sends_anonymous_visitors_to_the_login(client, agent):
    for url in every_page():
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


@pytest.mark.django_db
def test_an_account_without_a_role_is_refused_every_page(client, outsider, agent):
    client.force_login(outsider)
    for url in every_page():
        assert client.get(url).status_code == 403, url
        assert client.get(url, **HTMX).status_code == 403, url


@pytest.mark.django_db
def test_an_api_key_is_not_a_browser_session(client, agent, viewer):
    for key in (issue_key(agent=agent), issue_key(user=viewer)):
        for url in every_page():
            response = client.get(url, HTTP_AUTHORIZATION=f"Bearer {key}")
            assert response.status_code == 302, url
            assert response["Location"].startswith(reverse("login")), url


@pytest.mark.django_db
def test_every_page_answers_a_viewer_without_inline_styles(client, viewer, agent, supabase):
    GatewayCallFactory(agent=agent, server=supabase)
    client.force_login(viewer)
    for url in every_page():
        assert client.get(url).status_code == 200, url
    html = html_of(client, reverse("gateway:tools"))
    assert f'<a href="{reverse("gateway:servers")}" aria-current="page">Gateway</a>' in html
    for url in every_page():
        if url != reverse("gateway:calls-csv"):
            assert 'style="' not in html_of(client, url), url


@pytest.mark.django_db
def test_the_servers_without_the_call_log_show_no_call_figures(client, agent, supabase):
    GatewayCallFactory(agent=agent, server=supabase)
    client.force_login(only_permissions("sam", "view_upstreamserver"))

    html = html_of(client, reverse("gateway:servers"))

    assert "<code>supabase</code>" in html
    assert "Last 24 hours" not in html
    assert reverse("gateway:calls") not in html
    for url in every_page()[1:]:
        assert client.get(url).status_code == 403, url


@pytest.mark.django_db
def test_the_agent_page_needs_the_fleet_too(client, agent):
    client.force_login(only_permissions("cal", "view_gatewaycall"))

    assert client.get(reverse("gateway:calls")).status_code == 200
    assert client.get(reverse("gateway:agent", args=[agent.agent_id])).status_code == 403
    assert client.get(reverse("gateway:servers")).status_code == 403


# --- Upstream servers ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_reachable_upstream_shows_its_tools_and_their_hints(client, viewer, monkeypatch):
    monkeypatch.setenv("UPSTREAM_TOKEN_SUPABASE", SECRET)
    client.force_login(viewer)
    with upstream_server() as upstream:
        UpstreamServerFactory(name="supabase", url=upstream.url, secret_name="UPSTREAM_TOKEN_SUPABASE")
        html = html_of(client, reverse("gateway:servers"))

    card = section_of(html, "supabase")
    assert "status-ok" in card
    assert "reachable" in card
    assert upstream.url in card
    assert "<code>UPSTREAM_TOKEN_SUPABASE</code>" in card
    assert SECRET not in html
    sql = card.split("<code>execute_sql</code>")[1].split("</tr>")[0]
    drop = card.split("<code>drop_table</code>")[1].split("</tr>")[0]
    assert re.findall(r"<td>(yes|no)</td>", sql) == ["yes", "no"]  # read-only, not destructive
    assert "destructive</span>" in drop
    assert f"<code>{SQL}</code>" in card


@pytest.mark.django_db
def test_an_unreachable_upstream_says_so_and_the_others_still_show(client, viewer):
    client.force_login(viewer)
    with upstream_server() as upstream:
        UpstreamServerFactory(name="supabase", url=upstream.url)
        UpstreamServerFactory(name="github", url=closed_url())
        html = html_of(client, reverse("gateway:servers"))

    down = section_of(html, "github")
    assert "status-critical" in down
    assert "Did not list its tools" in down
    assert "ConnectError" in down
    assert "<code>execute_sql</code>" in section_of(html, "supabase")


@pytest.mark.django_db
def test_a_silent_upstream_is_given_up_after_the_probe_timeout(client, viewer, silent_upstream, monkeypatch):
    monkeypatch.setattr(health, "PROBE_TIMEOUT", 0.5)
    UpstreamServerFactory(name="hangs", url=silent_upstream)
    client.force_login(viewer)

    started = time.monotonic()
    html = html_of(client, reverse("gateway:servers"))

    assert time.monotonic() - started < 5
    assert "TimeoutError" in section_of(html, "hangs")


@pytest.mark.django_db
def test_a_disabled_upstream_is_not_asked(client, viewer):
    client.force_login(viewer)
    with upstream_server() as upstream:
        UpstreamServerFactory(name="supabase", url=upstream.url, enabled=False)
        html = html_of(client, reverse("gateway:servers"))

    card = section_of(html, "supabase")
    assert "not asked" in card
    assert "agents do not see its tools" in card
    assert upstream.authorizations == []


@pytest.mark.django_db
def test_a_stdio_upstream_shows_the_allowed_command_it_names(client, viewer, settings):
    settings.GATEWAY_STDIO_COMMANDS = {"some-mcp": {"argv": ["npx", "-y", "some-mcp-server"]}}
    UpstreamServerFactory(name="local", transport="stdio", url="", command="some-mcp", enabled=False)
    client.force_login(viewer)

    card = section_of(html_of(client, reverse("gateway:servers")), "local")

    assert "stdio command" in card
    assert "<code>some-mcp: npx -y some-mcp-server</code>" in card


@pytest.mark.django_db
def test_a_stdio_upstream_of_an_earlier_release_says_why_it_is_off(client, viewer):
    reason = "Disabled by the upgrade: name an allowed command (GATEWAY_STDIO_COMMANDS)."
    UpstreamServerFactory(
        name="legacy",
        transport="stdio",
        url="",
        command="npx -y some-mcp-server",
        enabled=False,
        disabled_reason=reason,
    )
    client.force_login(viewer)

    card = section_of(html_of(client, reverse("gateway:servers")), "legacy")

    assert "(not a command this deployment allows)" in card
    assert reason in card


@pytest.mark.django_db
def test_the_servers_page_counts_the_last_day_of_calls_with_latency_percentiles(client, viewer, agent, supabase):
    for latency in (10, 20, 30, 40):
        GatewayCallFactory(agent=agent, server=supabase, latency_ms=latency)
    GatewayCallFactory.create_batch(
        2, agent=agent, server=supabase, outcome="refused", refusal="RateLimited", latency_ms=None
    )
    GatewayCallFactory(agent=agent, server=supabase, outcome="tool_error", latency_ms=100)
    GatewayCallFactory(
        agent=agent, server=supabase, outcome="upstream_failed", latency_ms=None, error_class="ConnectError"
    )
    GatewayCallFactory(agent=agent, server=supabase, called_at=timezone.now() - timedelta(hours=25), latency_ms=9000)
    GatewayCallFactory(agent=agent, server=UpstreamServerFactory(name="github", url=closed_url()))
    client.force_login(viewer)

    card = section_of(html_of(client, reverse("gateway:servers")), "supabase")

    # p50 and p95 of 10, 20, 30, 40, 100 (refused and failed-before-answer calls have no latency)
    expected = {
        "Calls": "8",
        "OK": "4",
        "Refused": "2",
        "Failed": "2",
        "Latency p50": "30.0 ms",
        "Latency p95": "88.0 ms",
    }
    assert stats(card) == expected


@pytest.mark.django_db
def test_an_htmx_check_gets_only_the_server_cards(client, viewer, supabase):
    client.force_login(viewer)

    partial = html_of(client, reverse("gateway:servers"), **HTMX)

    assert "<html" not in partial
    assert "<code>supabase</code>" in partial


@pytest.mark.django_db
def test_the_servers_page_needs_a_constant_number_of_queries(client, viewer, agent, django_assert_max_num_queries):
    client.force_login(viewer)
    GatewayCallFactory(agent=agent, server=UpstreamServerFactory(name="one", url=closed_url()))
    with CaptureQueriesContext(connection) as first:
        html_of(client, reverse("gateway:servers"))
    for n in range(5):
        server = UpstreamServerFactory(name=f"more-{n}", url=closed_url(), enabled=n % 2 == 0)
        GatewayCallFactory.create_batch(3, agent=AgentFactory(), server=server)

    with django_assert_max_num_queries(len(first)):
        html = html_of(client, reverse("gateway:servers"))

    assert html.count('<section class="card section upstream"') == 6
    assert len(first) <= 8


# --- One agent -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_agent_page_lists_the_upstream_tools_its_manifest_grants(client, viewer, vlevel_with_grants, supabase):
    client.force_login(viewer)

    html = html_of(client, reverse("gateway:agent", args=["agent.seo.vlevel"]))

    grants = html.split('id="grants-heading"')[1].split("</section>")[0]
    sql = grants.split(f"<code>{SQL}</code>")[1].split("</tr>")[0]
    snapshot = grants.split("<code>mcp__chrome-devtools__take_snapshot</code>")[1].split("</tr>")[0]
    cells = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", sql, re.S)]
    assert cells == ["supabase", "Read", "100/min", "yes", "sql_rows"]
    assert "not registered" in snapshot
    assert "Execute" in snapshot
    assert "30/min" in snapshot
    assert grants.count("<tr>") == 3  # the header and the two mcp__ tools; the manifest's skills are not tools


@pytest.mark.django_db
def test_a_grant_on_a_disabled_upstream_says_so(client, viewer, vlevel_with_grants):
    UpstreamServerFactory(name="supabase", enabled=False)
    client.force_login(viewer)

    html = html_of(client, reverse("gateway:agent", args=["agent.seo.vlevel"]))

    assert 'status-no_data">disabled' in html


@pytest.mark.django_db
def test_the_agent_page_shows_its_last_20_calls_newest_first(client, viewer, agent, other_agent, supabase):
    for n in range(25):
        GatewayCallFactory(agent=agent, server=supabase, called_at=timezone.now() - timedelta(minutes=n), latency_ms=n)
    GatewayCallFactory(agent=other_agent, server=supabase, tool_id="mcp__supabase__drop_table")
    client.force_login(viewer)

    html = html_of(client, reverse("gateway:agent", args=[agent.agent_id]))

    rows = rows_of(html)
    assert len(rows) == 20
    assert "0.0 ms" in rows[0]
    assert "19.0 ms" in rows[-1]
    assert "drop_table" not in html
    assert "No active manifest" in html
    assert f"{reverse('gateway:calls')}?agent={agent.agent_id}" in html


@pytest.mark.django_db
def test_an_unknown_agent_is_404(client, viewer):
    client.force_login(viewer)
    assert client.get(reverse("gateway:agent", args=["agent.nobody"])).status_code == 404


@pytest.mark.django_db
def test_the_agent_page_is_linked_from_the_agent_detail_for_those_who_may_read_it(client, viewer, agent):
    url = reverse("gateway:agent", args=[agent.agent_id])
    client.force_login(viewer)
    assert url in html_of(client, reverse("agents:agent-detail", args=[agent.agent_id]))

    client.force_login(only_permissions("fay", "view_agent"))
    assert url not in html_of(client, reverse("agents:agent-detail", args=[agent.agent_id]))


@pytest.mark.django_db
def test_the_agent_page_needs_a_constant_number_of_queries(
    client, viewer, vlevel_with_grants, supabase, django_assert_max_num_queries
):
    client.force_login(viewer)
    url = reverse("gateway:agent", args=["agent.seo.vlevel"])
    GatewayCallFactory(agent=vlevel_with_grants, server=supabase)
    with CaptureQueriesContext(connection) as first:
        html_of(client, url)
    GatewayCallFactory.create_batch(30, agent=vlevel_with_grants, server=supabase)
    UpstreamServerFactory(name="chrome-devtools")

    with django_assert_max_num_queries(len(first)):
        html = html_of(client, url)

    assert len(rows_of(html)) == 20
    assert len(first) <= 10


# --- Call log ------------------------------------------------------------------------------------


@pytest.fixture
def log(agent, other_agent, supabase) -> dict[str, GatewayCall]:
    """Five calls, each found by one filter."""
    github = UpstreamServerFactory(name="github", url=closed_url())
    return {
        "ok": GatewayCallFactory.create(agent=agent, server=supabase, called_at=at(0)),
        "refused": GatewayCallFactory.create(
            agent=agent, server=supabase, outcome="refused", refusal="RateLimited", latency_ms=None, called_at=at(1)
        ),
        "other": GatewayCallFactory.create(agent=other_agent, server=supabase, called_at=at(2)),
        "github": GatewayCallFactory.create(
            agent=agent, server=github, tool_id="mcp__github__create_issue", outcome="tool_error", called_at=at(3)
        ),
        "old": GatewayCallFactory.create(
            agent=agent, server=supabase, outcome="upstream_failed", error_class="ReadTimeout", called_at=at(10)
        ),
    }


def shown(html: str, log: dict[str, GatewayCall]) -> set[str]:
    """Which calls of the log a table shows, told by their time."""
    return {
        name for name, call in log.items() if timezone.localtime(call.called_at).strftime("%Y-%m-%d %H:%M:%S") in html
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, {"ok", "refused", "other", "github", "old"}),
        ({"agent": "agent.rag.indexer"}, {"other"}),
        ({"tool": "create_issue"}, {"github"}),
        ({"server": "github"}, {"github"}),
        ({"outcome": "upstream_failed"}, {"old"}),
        ({"refusal": "ratelimited"}, {"refused"}),
        ({"since": "SINCE_2"}, {"ok", "refused", "other"}),
        ({"until": "SINCE_2"}, {"other", "github", "old"}),
        ({"since": "SINCE_3", "until": "SINCE_1", "agent": "agent.seo.vlevel"}, {"refused", "github"}),
    ],
)
def test_the_call_log_filters(client, viewer, log, params, expected):
    days = {f"SINCE_{n}": (timezone.localdate() - timedelta(days=n)).isoformat() for n in range(4)}
    client.force_login(viewer)

    html = html_of(client, reverse("gateway:calls"), {k: days.get(v, v) for k, v in params.items()})

    assert shown(html, log) == expected
    assert f"{len(expected)} call{'s' if len(expected) > 1 else ''}" in html


@pytest.mark.django_db
def test_a_bad_filter_is_ignored_and_said(client, viewer, log):
    client.force_login(viewer)

    html = html_of(client, reverse("gateway:calls"), {"since": "yesterday", "outcome": "exploded", "agent": "agent.x"})

    assert shown(html, log) == set(log)
    assert "This filter is ignored." in html


@pytest.mark.django_db
def test_the_call_log_shows_what_happened(client, viewer, log):
    client.force_login(viewer)

    html = html_of(client, reverse("gateway:calls"))

    refused = next(row for row in rows_of(html) if "RateLimited" in row)
    assert "call-refused" in refused
    assert "—" in refused  # not forwarded: no latency
    failed = next(row for row in rows_of(html) if "ReadTimeout" in row)
    assert "Upstream failed" in failed
    assert log["ok"].arguments_hash[:12] in html
    assert "select 1" not in html  # arguments stay out of the page


@pytest.mark.django_db
def test_the_call_log_is_paginated_and_an_htmx_page_is_only_the_rows(client, viewer, agent, supabase):
    GatewayCallFactory.create_batch(60, agent=agent, server=supabase)
    client.force_login(viewer)

    first = html_of(client, reverse("gateway:calls"))
    second = html_of(client, reverse("gateway:calls"), {"page": 2}, **HTMX)

    assert len(rows_of(first)) == 50
    assert "Page 1 of 2" in first
    assert "60 calls" in first
    assert len(rows_of(second)) == 10
    assert "<html" not in second
    assert 'hx-get="?page=1"' in second


@pytest.mark.django_db
def test_the_call_log_needs_a_constant_number_of_queries(client, viewer, log, django_assert_max_num_queries):
    client.force_login(viewer)
    with CaptureQueriesContext(connection) as first:
        html_of(client, reverse("gateway:calls"), {"server": "supabase"})
    for _ in range(40):
        GatewayCallFactory(agent=AgentFactory(), server=log["ok"].server)

    with django_assert_max_num_queries(len(first)):
        html = html_of(client, reverse("gateway:calls"), {"server": "supabase"})

    assert len(rows_of(html)) == 44
    assert len(first) <= 11  # with the navigation bar's pending count of the inbox


# --- CSV -----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_csv_holds_the_filtered_calls_with_every_column(client, viewer, log):
    client.force_login(viewer)

    response = client.get(reverse("gateway:calls-csv"), {"agent": "agent.seo.vlevel", "server": "supabase"})

    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == 'attachment; filename="gateway-calls.csv"'
    rows = read_csv(response)
    assert [row["outcome"] for row in rows] == ["ok", "refused", "upstream_failed"]  # newest first
    first = rows[0]
    call = log["ok"]
    assert list(first) == [
        "called_at",
        "agent",
        "tool_id",
        "server",
        "job",
        "session",
        "outcome",
        "refusal",
        "error_class",
        "latency_ms",
        "arguments_hash",
        "arguments",
    ]
    assert datetime.fromisoformat(first["called_at"]) == call.called_at
    assert first["agent"] == "agent.seo.vlevel"
    assert first["tool_id"] == SQL
    assert first["server"] == "supabase"
    assert first["latency_ms"] == "12.0"
    assert first["arguments_hash"] == call.arguments_hash
    assert first["arguments"] == '{"query": "select 1"}'
    assert rows[1]["refusal"] == "RateLimited"
    assert rows[1]["latency_ms"] == ""
    assert rows[2]["error_class"] == "ReadTimeout"


@pytest.mark.django_db
def test_the_csv_exports_arguments_only_where_they_were_stored(client, viewer, agent, supabase):
    GatewayCallFactory(agent=agent, server=supabase, arguments=None, arguments_hash="a" * 64)
    client.force_login(viewer)

    (row,) = read_csv(client.get(reverse("gateway:calls-csv")))

    assert row["arguments"] == ""
    assert row["arguments_hash"] == "a" * 64


@pytest.mark.django_db
def test_the_csv_names_job_and_session_and_defuses_formulas(client, viewer, agent, supabase):
    from tests.factories.sessions import AISessionFactory
    from tests.support.jobs import submit_job
    from tests.support.manifests import load

    vlevel = load("agent.seo.vlevel")
    job = submit_job(vlevel, {"urls": ["https://shop.test/1"]}, key="csv")
    session = AISessionFactory(agent=vlevel)
    GatewayCallFactory(agent=vlevel, server=supabase, job=job, session=session, tool_id="=HYPERLINK()")
    client.force_login(viewer)

    (row,) = read_csv(client.get(reverse("gateway:calls-csv")))

    assert row["job"] == str(job.job_id)
    assert row["session"] == str(session.session_id)
    assert row["tool_id"] == "'=HYPERLINK()"


@pytest.mark.django_db
def test_the_csv_needs_a_constant_number_of_queries(client, viewer, log, django_assert_max_num_queries):
    client.force_login(viewer)
    with CaptureQueriesContext(connection) as first:
        assert len(read_csv(client.get(reverse("gateway:calls-csv")))) == 5
    GatewayCallFactory.create_batch(40, agent=log["ok"].agent, server=log["ok"].server)

    with django_assert_max_num_queries(len(first)):
        assert len(read_csv(client.get(reverse("gateway:calls-csv")))) == 45


@pytest.mark.django_db
def test_the_csv_link_carries_the_page_filters(client, viewer, log):
    client.force_login(viewer)

    html = html_of(client, reverse("gateway:calls"), {"outcome": "refused", "page": 1}, **HTMX)

    assert f'href="{reverse("gateway:calls-csv")}?outcome=refused"' in html


# --- Per tool ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_tool_report_counts_the_last_7_days_per_tool(client, viewer, log):
    client.force_login(viewer)

    html = html_of(client, reverse("gateway:tools"))

    every = html.split('id="totals-heading"')[1].split("</section>")[0]
    assert stats(every) == {
        "Calls": "4",
        "OK": "2",
        "Refused": "1",
        "Failed": "1",
        "Latency p50": "12.0 ms",
        "Latency p95": "12.0 ms",
    }
    table = html.split('<table class="list compact tool-report">')[1]
    tools = re.findall(r"<code>(mcp__[a-z_-]+)</code>", table)
    assert tools == [SQL, "mcp__github__create_issue"]  # most called first
    sql = table.split(f"<code>{SQL}</code>")[1].split("</tr>")[0]
    assert re.findall(r'<td class="num">([^<]*)</td>', sql)[:4] == ["3", "2", "1", "0"]
    assert sql.count("<svg") == 3  # calls, refusals and p95 per day


@pytest.mark.django_db
def test_a_wider_window_takes_older_calls_and_an_htmx_change_gets_only_the_report(client, viewer, log):
    client.force_login(viewer)

    partial = html_of(client, reverse("gateway:tools"), {"window": 30}, **HTMX)

    assert "<html" not in partial
    assert stats(partial.split("</section>")[0])["Calls"] == "5"
    assert "30 days, since" in partial
    default = html_of(client, reverse("gateway:tools"), {"window": 5000}).split('id="totals-heading"')[1]
    assert stats(default)["Calls"] == "4"  # an unknown window is the default


@pytest.mark.django_db
def test_the_tool_report_draws_each_day_of_the_window(client, viewer, log):
    client.force_login(viewer)

    html = html_of(client, reverse("gateway:tools"))

    every = html.split('id="totals-heading"')[1].split("</section>")[0]
    calls_chart = every.split("<figure")[1]
    points = re.search(r'<polyline class="trend" points="([^"]+)"', calls_chart).group(1).split()
    assert len(points) == 7
    first_day = (timezone.localdate() - timedelta(days=6)).isoformat()
    assert f"Calls from {first_day} to {timezone.localdate().isoformat()}" in calls_chart


@pytest.mark.django_db
def test_an_empty_log_says_so(client, viewer):
    client.force_login(viewer)

    assert "No upstream tool was called in this window." in html_of(client, reverse("gateway:tools"))
    assert "No gateway call matches these filters." in html_of(client, reverse("gateway:calls"))
    assert "No upstream server is registered" in html_of(client, reverse("gateway:servers"))


@pytest.mark.django_db
def test_the_tool_report_needs_a_constant_number_of_queries(client, viewer, log, django_assert_max_num_queries):
    client.force_login(viewer)
    with CaptureQueriesContext(connection) as first:
        html_of(client, reverse("gateway:tools"))
    for n in range(30):
        GatewayCallFactory(
            agent=log["ok"].agent, server=log["ok"].server, tool_id=f"mcp__supabase__t{n}", called_at=at(n % 7)
        )

    with django_assert_max_num_queries(len(first)):
        html = html_of(client, reverse("gateway:tools"))

    assert html.count("<code>mcp__supabase__t") == 30
    assert len(first) <= 10
