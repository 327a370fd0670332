"""The scanner of tool results (gateway/leaks.py): each secret an upstream may hand back is found
and replaced by a marker naming its kind; ordinary text, ids and digests are left alone."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import uuid

import mcp_types as types
import pytest

from gateway import leaks
from governance.kernel import keys

# Assembled, so that no scanner of this repository takes the test data for a leak.
AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEAx4b\nQ0KfY2x1\n-----END RSA PRIVATE KEY-----"


def redacted(text: str, own: tuple[str, ...] = ()) -> str:
    return leaks.redact(text, leaks.find(text, own))


@pytest.mark.parametrize(
    ("text", "kind", "secret"),
    [
        pytest.param(f"id {AWS_KEY_ID} here", "AWS Access Key", AWS_KEY_ID, id="aws-key-id"),
        pytest.param(f"aws_secret_access_key = '{AWS_SECRET}'", "AWS Access Key", AWS_SECRET, id="aws-secret"),
        pytest.param(f"token: {GITHUB}.", "GitHub Token", GITHUB, id="github"),
        pytest.param(f"slack {SLACK} ok", "Slack Token", SLACK, id="slack"),
        pytest.param(f"stripe {STRIPE}", "Stripe Access Key", STRIPE, id="stripe"),
        pytest.param(f"Authorization: Bearer {JWT}", "JSON Web Token", JWT, id="jwt"),
        pytest.param(f"key:\n{PEM}\nthat was it", "Private Key", PEM, id="private-key"),
        pytest.param(
            "db at postgres://app:hunter2pass@db.internal/app", "Basic Auth Credentials", "hunter2pass", id="url"
        ),
    ],
)
def test_each_known_credential_format_is_found_and_replaced_by_its_kind(text, kind, secret):
    findings = leaks.find(text)

    assert [f.kind for f in findings] == [kind]
    assert secret not in redacted(text)
    assert redacted(text) == text.replace(secret, f"[redacted: {kind}]")


def test_a_bare_aws_secret_key_and_a_random_token_are_found_by_their_entropy():
    token = secrets.token_urlsafe(32)
    text = f"secret {AWS_SECRET} and session {token}"

    assert redacted(text) == (
        "secret [redacted: Base64 High Entropy String] and session [redacted: Base64 High Entropy String]"
    )


def test_a_short_password_in_a_url_is_redacted_there_and_nowhere_else():
    text = "https://bot:x@hooks.example.com said x marks the spot"

    assert redacted(text) == "https://bot:[redacted: Basic Auth Credentials]@hooks.example.com said x marks the spot"


def test_a_cut_private_key_is_redacted_to_the_end_of_the_text():
    text = "dump: " + PEM.split("\n-----END")[0]

    assert redacted(text) == "dump: [redacted: Private Key]"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(
            "The quick brown fox jumps over the lazy dog. Run `manage.py upstreams list`, then open "
            "/api/v1/agents/research-assistant/jobs?status=done; see RateLimitedRequestsPerMinute2024.",
            id="prose-paths-and-names",
        ),
        pytest.param(f"job {uuid.uuid4()} session {uuid.uuid4().hex} run {str(uuid.uuid4()).upper()}", id="uuids"),
        pytest.param("sha256 " + hashlib.sha256(b'{"query": "select 1"}').hexdigest(), id="sha256-hex"),
        pytest.param("sha256 " + hashlib.sha256(b"payload").hexdigest().upper(), id="sha256-upper-hex"),
        pytest.param(
            f"{base64.b64encode(b'password').decode()} {base64.b64encode(b'correct horse').decode()}", id="base64-words"
        ),
        pytest.param("commit 9fceb02d0ae598e95dc970b74767f19372d61af8 ulid 01ARZ3NDEKTSV4RRFFQ69G5FAV", id="ids"),
        pytest.param(
            "![chart](data:image/png;base64," + base64.b64encode(bytes(range(7, 250, 3))).decode() + ")",
            id="inline-image",
        ),
        pytest.param(
            json.dumps({"rows": [{"id": 1, "title": "Canonical links", "updated": "2026-11-29T19:33:19Z"}]}),
            id="json-rows",
        ),
    ],
)
def test_ordinary_text_ids_and_digests_are_left_alone(text):
    assert leaks.find(text) == []
    assert redacted(text) == text


def test_the_planes_secret_is_found_even_when_it_does_not_look_random():
    secret_key = "correct horse battery staple"
    text = f"SECRET_KEY={secret_key}\n{json.dumps({'django': {'secret': secret_key}})}"

    assert redacted(text, (secret_key,)) == (
        'SECRET_KEY=[redacted: Platform Secret]\n{"django": {"secret": "[redacted: Platform Secret]"}}'
    )


def test_a_planes_secret_is_found_as_a_json_string_holds_it():
    secret_key = 'pa"ss\\word-of-the-plane'
    text = json.dumps({"env": {"SECRET_KEY": secret_key}})

    assert redacted(text, (secret_key,)) == '{"env": {"SECRET_KEY": "[redacted: Platform Secret]"}}'


def test_a_too_short_configured_value_is_not_looked_for():
    """A short password would otherwise redact every word it spells."""
    assert redacted("the governance plane", ("governance",)) == "the governance plane"


@pytest.mark.parametrize("kind", ["agent", "operator"])
def test_an_api_key_the_plane_issued_is_found_by_its_shape(kind):
    plain = keys.generate(kind).plain

    assert redacted(f"Authorization: Bearer {plain}") == "Authorization: Bearer [redacted: Platform API Key]"


def result_with(text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text=text),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///etc/app.env", text=f"AWS_ACCESS_KEY_ID={AWS_KEY_ID}"),
            ),
        ],
        structured_content={"config": {"tokens": [GITHUB, "plain"], "count": 2}},
    )


def test_every_text_of_a_result_is_scanned_and_each_secret_counted_once():
    result = result_with(f"key {AWS_KEY_ID}, token {GITHUB}")

    screened = leaks.screen(result, "redact")

    assert screened.found == {"AWS Access Key": 1, "GitHub Token": 1}  # twice each, two secrets
    assert screened.result == screened.stored
    dumped = screened.stored.model_dump_json()
    assert AWS_KEY_ID not in dumped
    assert GITHUB not in dumped
    assert screened.stored.structured_content == {
        "config": {"tokens": ["[redacted: GitHub Token]", "plain"], "count": 2}
    }
    embedded = screened.stored.content[1]
    assert isinstance(embedded, types.EmbeddedResource)
    assert isinstance(embedded.resource, types.TextResourceContents)
    assert embedded.resource.text == "AWS_ACCESS_KEY_ID=[redacted: AWS Access Key]"
    assert AWS_KEY_ID in result.model_dump_json()  # the upstream's own result is not changed in place


def test_block_passes_nothing_and_log_passes_the_result_unchanged_both_keep_the_redacted_copy():
    result = result_with(f"key {AWS_KEY_ID}")

    blocked = leaks.screen(result, "block")
    logged = leaks.screen(result, "log")

    assert blocked.blocked
    assert blocked.result is None
    assert logged.result is result
    for screened in (blocked, logged):
        assert screened.kinds == ["AWS Access Key", "GitHub Token"]
        assert AWS_KEY_ID not in screened.stored.model_dump_json()


@pytest.mark.parametrize("mode", ["redact", "block", "log"])
def test_a_clean_result_passes_as_it_is_whatever_the_mode(mode):
    result = types.CallToolResult(content=[types.TextContent(type="text", text="rows for select 1")])

    screened = leaks.screen(result, mode)

    assert screened.result is result
    assert screened.found == {}
    assert not screened.blocked


def test_a_finding_never_shows_its_value():
    (finding,) = leaks.find(f"id {AWS_KEY_ID}")

    assert AWS_KEY_ID not in repr(finding)
