"""OAuth 2.1 at /mcp, against the live server: discovery, registration, an operator's consent
through the real pages, tokens bound to /mcp, refresh and revocation, driven by the MCP SDK's own
OAuth client; and the hostile callers (a client naming its own subject, another audience, a
forged or foreign token, an operator without the power to act for agents)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from django.utils import timezone
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from oauth2_provider.models import AccessToken, Application, RefreshToken

from governance.kernel.audit import AuditAction
from governance.kernel.models import AuditEvent
from tests.factories.governance import UserFactory
from tests.support.keys import issue_key
from tests.support.manifests import load
from tests.support.mcp import mcp_session

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"
REDIRECT = "http://127.0.0.1:33418/callback"


@dataclass
class MemoryStorage:
    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def _hidden_fields(html: str) -> dict[str, str]:
    fields = {}
    for tag in re.findall(r"<input[^>]*>", html):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name and 'type="hidden"' in tag:
            fields[name.group(1)] = (value.group(1) if value else "").replace("&amp;", "&")
    return fields


@dataclass
class Operator:
    """A person at the plane's pages, signed in, who answers consent pages."""

    base: str
    username: str
    http: httpx2.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx2.Client(base_url=self.base, follow_redirects=False, timeout=30)
        page = self.http.get("/accounts/login/")
        token = _hidden_fields(page.text)["csrfmiddlewaretoken"]
        answer = self.http.post(
            "/accounts/login/",
            data={"username": self.username, "password": PASSWORD, "csrfmiddlewaretoken": token},
            headers={"Referer": f"{self.base}/accounts/login/"},
        )
        assert answer.status_code == 302, answer.text[:500]

    def consent_page(self, url: str) -> httpx2.Response:
        return self.http.get(url)

    def decide(self, url: str, subject: str, *, allow: bool = True) -> httpx2.Response:
        page = self.consent_page(url)
        assert page.status_code == 200, page.text[:500]
        data = {**_hidden_fields(page.text), "subject": subject}
        if allow:
            data["allow"] = "on"
        return self.http.post(urlsplit(url).path, data=data, headers={"Referer": url})


def _flow(base: str, operator: Operator, subject: str, storage: MemoryStorage) -> OAuthClientProvider:
    """The SDK's OAuth client, its browser step played by ``operator``."""
    asked: list[str] = []

    async def redirect(url: str) -> None:
        asked.append(url)

    async def callback() -> AuthorizationCodeResult:
        answer = await anyio.to_thread.run_sync(operator.decide, asked[-1], subject)
        assert answer.status_code == 302, answer.text[:500]
        query = parse_qs(urlsplit(answer.headers["Location"]).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=query["iss"][0])

    metadata = OAuthClientMetadata(
        client_name="Test MCP client",
        redirect_uris=[REDIRECT],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(f"{base}/mcp", metadata, storage, redirect, callback)


def _mcp_tokens() -> Any:
    """The tokens consents made (registration also issues one, for RFC 7592's management)."""
    return AccessToken.objects.filter(scope__startswith="mcp")


def _tool_names(base: str, auth: Any) -> list[str]:
    async def main() -> list[str]:
        async with (
            httpx2.AsyncClient(auth=auth, timeout=60) as http,
            streamable_http_client(f"{base}/mcp", http_client=http) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return sorted(tool.name for tool in (await session.list_tools()).tools)

    return anyio.run(main)


@pytest.fixture
def vlevel_agent(transactional_db):
    return load("agent.seo.vlevel")


@pytest.fixture
def alice(transactional_db):
    """An Admin: may act for agents (she may mint their keys)."""
    return UserFactory(username="alice", roles=["Admin"])


def test_discovery_documents_name_the_resource_and_the_authorization_server(live_server):
    base = live_server.url
    challenge = httpx2.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert challenge.status_code == 401
    header = challenge.headers["WWW-Authenticate"]
    assert f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' in header
    assert 'scope="mcp"' in header

    resource = httpx2.get(f"{base}/.well-known/oauth-protected-resource/mcp").json()
    assert resource["resource"] == f"{base}/mcp"
    assert resource["authorization_servers"] == [base]
    assert resource["scopes_supported"] == ["mcp"]

    server = httpx2.get(f"{base}/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == base
    assert server["authorization_endpoint"] == f"{base}/oauth/authorize/"
    assert server["token_endpoint"] == f"{base}/oauth/token/"
    assert server["registration_endpoint"] == f"{base}/oauth/register/"
    assert server["revocation_endpoint"] == f"{base}/oauth/revoke/"
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["response_types_supported"] == ["code"]
    assert set(server["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    assert server["authorization_response_iss_parameter_supported"] is True
    assert server["client_id_metadata_document_supported"] is True


def test_the_key_url_answers_keys_only_and_advertises_no_oauth(live_server, vlevel_agent):
    base = live_server.url
    refused = httpx2.post(f"{base}/mcp/key", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert refused.status_code == 401
    assert "resource_metadata" not in refused.headers["WWW-Authenticate"]
    assert httpx2.get(f"{base}/.well-known/oauth-protected-resource").status_code == 404
    assert httpx2.get(f"{base}/.well-known/oauth-protected-resource/mcp/key").status_code == 404

    key = issue_key(agent=vlevel_agent)
    listed = httpx2.post(
        f"{base}/mcp/key",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"},
    )
    assert listed.status_code == 200
    assert listed.json()["result"]["tools"]


def test_the_sdk_client_signs_in_as_the_agent_the_operator_chose_refreshes_and_is_revoked(
    live_server, vlevel_agent, alice
):
    base = live_server.url
    storage = MemoryStorage()
    provider = _flow(base, Operator(base, "alice"), vlevel_agent.agent_id, storage)

    # Exactly the chosen agent's tools: what its own key lists.
    with_key = mcp_session(base, issue_key(agent=vlevel_agent), lambda s: s.list_tools())
    assert _tool_names(base, provider) == sorted(tool.name for tool in with_key.tools)

    token = _mcp_tokens().get()
    assert token.scope == f"mcp agent:{vlevel_agent.agent_id}"
    assert token.resource == [f"{base}/mcp"]
    assert token.token == ""  # only the token's SHA-256 is kept
    assert storage.client is not None
    assert Application.objects.get().registration_source == "dcr"
    consented = AuditEvent.objects.get(action=AuditAction.OAUTH_CONSENTED)
    assert consented.actor == "user:alice"
    assert consented.data["acts_as"] == f"agent:{vlevel_agent.agent_id}"

    # Refresh: the SDK refreshes an expired token by itself; the old refresh token is spent.
    first_refresh = storage.tokens.refresh_token
    provider.context.token_expiry_time = time.time() - 1
    assert _tool_names(base, provider) == sorted(tool.name for tool in with_key.tools)
    assert storage.tokens.refresh_token != first_refresh
    assert RefreshToken.objects.filter(revoked__isnull=False).count() == 1
    assert _mcp_tokens().latest("created").scope == f"mcp agent:{vlevel_agent.agent_id}"

    # Revocation (RFC 7009) by the client: the token no longer opens /mcp.
    access = storage.tokens.access_token
    revoked = httpx2.post(f"{base}/oauth/revoke/", data={"token": access, "client_id": storage.client.client_id})
    assert revoked.status_code == 200
    after = httpx2.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {access}", "Accept": "application/json, text/event-stream"},
    )
    assert after.status_code == 401
    assert 'error="invalid_token"' in after.headers["WWW-Authenticate"]


def test_an_operator_acting_as_themselves_gets_an_operators_tools(live_server, transactional_db):
    UserFactory(username="victor", roles=["Viewer"])
    base = live_server.url
    provider = _flow(base, Operator(base, "victor"), "self", MemoryStorage())
    names = _tool_names(base, provider)
    assert names
    assert "submit_job" not in names  # the read-only tools an operator key lists
    assert _mcp_tokens().get().scope == "mcp operator"


def _authorize_url(base: str, **params: str) -> str:
    client = Application.objects.create(
        name="probe",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=REDIRECT,
        hash_client_secret=False,
    )
    query = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": REDIRECT,
        "state": "s1",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
        **params,
    }
    return f"{base}/oauth/authorize/?" + "&".join(f"{k}={v}" for k, v in query.items())


def test_a_client_cannot_name_whom_it_acts_as(live_server, vlevel_agent, alice):
    base = live_server.url
    page = Operator(base, "alice").consent_page(_authorize_url(base, scope=f"mcp%20agent:{vlevel_agent.agent_id}"))
    assert page.status_code == 302
    assert parse_qs(urlsplit(page.headers["Location"]).query)["error"] == ["invalid_scope"]
    assert not AccessToken.objects.exists()


def test_a_client_cannot_ask_for_another_audience(live_server, alice):
    base = live_server.url
    page = Operator(base, "alice").consent_page(_authorize_url(base, resource="https://elsewhere.example/mcp"))
    assert page.status_code == 302
    assert parse_qs(urlsplit(page.headers["Location"]).query)["error"] == ["invalid_target"]


def test_an_operator_who_may_not_mint_agent_keys_cannot_hand_out_an_agent(live_server, vlevel_agent):
    UserFactory(username="rita", roles=["Reviewer"])
    base = live_server.url
    operator = Operator(base, "rita")
    url = _authorize_url(base)
    assert vlevel_agent.agent_id not in operator.consent_page(url).text
    answer = operator.decide(url, vlevel_agent.agent_id)
    assert answer.status_code == 400  # the form again, with the refusal
    assert "Select a valid choice" in answer.text
    assert not AccessToken.objects.exists()
    assert not AuditEvent.objects.filter(action=AuditAction.OAUTH_CONSENTED).exists()


def test_refusing_is_audited_and_tells_the_client(live_server, alice):
    base = live_server.url
    answer = Operator(base, "alice").decide(_authorize_url(base), "self", allow=False)
    assert parse_qs(urlsplit(answer.headers["Location"]).query)["error"] == ["access_denied"]
    assert AuditEvent.objects.get(action=AuditAction.OAUTH_DENIED).actor == "user:alice"


def _token(user: Any, scope: str, resource: list[str], **fields: Any) -> str:
    """A token row as django-oauth-toolkit writes one (only its checksum is used)."""
    application = Application.objects.create(
        name="forged",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=REDIRECT,
    )
    plain = f"tok-{scope}-{len(resource)}-{time.monotonic_ns()}"
    AccessToken.objects.create(
        user=user,
        application=application,
        token=plain,
        scope=scope,
        resource=resource,
        expires=fields.pop("expires", timezone.now() + timedelta(hours=1)),
    )
    return plain


def _status(base: str, token: str) -> int:
    return httpx2.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
    ).status_code


def test_tokens_that_are_not_exactly_a_consented_grant_for_this_resource_are_refused(live_server, vlevel_agent, alice):
    base = live_server.url
    mcp = f"{base}/mcp"
    agent_scope = f"mcp agent:{vlevel_agent.agent_id}"
    assert _status(base, _token(alice, agent_scope, [mcp])) == 200
    assert _status(base, _token(alice, agent_scope, ["https://elsewhere.example/mcp"])) == 401  # another audience
    assert _status(base, _token(alice, agent_scope, [])) == 401  # bound to nothing
    assert _status(base, _token(alice, "mcp", [mcp])) == 401  # no subject
    assert _status(base, _token(alice, f"{agent_scope} operator", [mcp])) == 401  # two subjects
    assert _status(base, _token(alice, "mcp agent:agent.nobody", [mcp])) == 401  # no such agent
    assert _status(base, _token(alice, agent_scope, [mcp], expires=timezone.now() - timedelta(seconds=1))) == 401
    # The operator who consented loses the power to act for agents: their grants stop at once.
    granted = _token(alice, agent_scope, [mcp])
    alice.groups.clear()
    assert _status(base, granted) == 401


def test_registration_is_bounded(live_server, settings):
    settings.OAUTH_REGISTRATIONS_PER_HOUR = 1
    body = {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": "c"}
    assert httpx2.post(f"{live_server.url}/oauth/register/", json=body).status_code == 201
    assert httpx2.post(f"{live_server.url}/oauth/register/", json=body).status_code in (401, 403)
    assert Application.objects.count() == 1


@pytest.mark.parametrize(
    "client_id",
    ["https://127.0.0.1/client.json", "https://169.254.169.254/latest/meta-data/client", "https://localhost/c.json"],
)
def test_a_client_metadata_document_on_an_internal_address_is_never_fetched(live_server, alice, client_id):
    base = live_server.url
    url = (
        f"{base}/oauth/authorize/?response_type=code&client_id={client_id}&redirect_uri={REDIRECT}"
        "&state=s&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256"
    )
    page = Operator(base, "alice").consent_page(url)
    assert page.status_code == 400
    assert not Application.objects.exists()


def test_a_registration_token_is_no_key_to_mcp(live_server):
    answer = httpx2.post(
        f"{live_server.url}/oauth/register/",
        json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": "c"},
    )
    assert answer.status_code == 201
    assert _status(live_server.url, answer.json()["registration_access_token"]) == 401


def test_an_admin_revokes_a_grant_in_the_admin_and_it_is_audited(live_server, client, vlevel_agent, transactional_db):
    staff = UserFactory(username="alice", roles=["Admin"], is_staff=True)
    mcp = f"{live_server.url}/mcp"
    granted = _token(staff, f"mcp agent:{vlevel_agent.agent_id}", [mcp])
    token = AccessToken.objects.get(scope__startswith="mcp")
    client.force_login(staff)

    listing = client.get("/admin/oauth2_provider/accesstoken/")
    assert f"agent {vlevel_agent.agent_id}" in listing.content.decode()
    assert granted not in listing.content.decode()
    answer = client.post(
        "/admin/oauth2_provider/accesstoken/", {"action": "revoke_tokens", "_selected_action": [token.pk]}
    )
    assert answer.status_code == 302
    assert _status(live_server.url, granted) == 401
    revoked = AuditEvent.objects.get(action=AuditAction.OAUTH_REVOKED)
    assert revoked.actor == "user:alice"
    assert revoked.data["scope"] == f"mcp agent:{vlevel_agent.agent_id}"
    assert granted not in str(revoked.data)


def test_a_viewer_cannot_revoke_grants(live_server, client, vlevel_agent, transactional_db):
    staff = UserFactory(username="victor", roles=["Viewer"], is_staff=True)
    granted = _token(staff, "mcp operator", [f"{live_server.url}/mcp"])
    client.force_login(staff)
    answer = client.post(
        "/admin/oauth2_provider/accesstoken/",
        {"action": "revoke_tokens", "_selected_action": [AccessToken.objects.get(scope__startswith="mcp").pk]},
    )
    assert answer.status_code == 403
    assert _status(live_server.url, granted) == 200
    assert not AuditEvent.objects.filter(action=AuditAction.OAUTH_REVOKED).exists()


@pytest.mark.parametrize(
    ("redirect", "allowed"),
    [
        ("http://127.0.0.1:33418/callback", True),
        ("http://localhost:6274/oauth/callback", True),
        ("https://claude.ai/api/mcp/auth_callback", True),
        ("cursor://anysphere.cursor-retrieval/oauth/callback", True),
        ("http://evil.example/callback", False),
        ("javascript:alert(1)", False),
    ],
)
def test_plain_http_redirects_only_to_the_clients_own_machine(live_server, redirect, allowed):
    answer = httpx2.post(
        f"{live_server.url}/oauth/register/",
        json={"redirect_uris": [redirect], "token_endpoint_auth_method": "none", "client_name": "c"},
    )
    if not allowed and answer.status_code == 201:  # registered, but never redirected to
        client_id = answer.json()["client_id"]
        UserFactory(username="alice", roles=["Admin"])
        page = Operator(live_server.url, "alice").consent_page(
            f"{live_server.url}/oauth/authorize/?response_type=code&client_id={client_id}&redirect_uri={redirect}"
            "&state=s&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256"
        )
        assert page.status_code == 400
        assert "Location" not in page.headers
    else:
        assert (answer.status_code == 201) is allowed


def _self_signed(tmp_path: Any) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and its key, as files; the test trusts it through SSL_CERT_FILE."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_file), str(key_file)


@pytest.fixture
def client_metadata(tmp_path, monkeypatch, settings) -> Any:
    """A client ID metadata document served over https on this machine (an operator allowed
    internal metadata URLs for the test); yields its URL, which is the client's id."""
    import json
    import ssl
    import threading
    from http.server import BaseHTTPRequestHandler

    from tests.support.http_servers import QuietServer

    cert, key = _self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", cert)
    settings.OAUTH_CLIENT_METADATA_INTERNAL = True
    fetched: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetched.append(self.path)
            body = json.dumps(
                {
                    "client_id": url,
                    "client_name": "A client known by its URL",
                    "redirect_uris": [REDIRECT],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                    "token_endpoint_auth_method": "none",
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = QuietServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    url = f"https://127.0.0.1:{httpd.server_address[1]}/oauth/client.json"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield url, fetched
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_client_known_by_its_metadata_document_signs_in_without_registering(
    live_server, vlevel_agent, alice, client_metadata
):
    url, fetched = client_metadata
    base = live_server.url
    storage = MemoryStorage()
    provider = _flow(base, Operator(base, "alice"), vlevel_agent.agent_id, storage)
    provider.context.client_metadata_url = url

    assert "submit_job" in _tool_names(base, provider)
    application = Application.objects.get(client_id=url)
    assert application.registration_source == "cimd"
    assert application.name == "A client known by its URL"
    assert fetched  # the plane fetched the document, through the outbound guard
    assert _mcp_tokens().get().application == application
