"""The web side against someone on the internet: password guessing is locked out per username and
address, every answer carries the Content-Security-Policy, production settings pass Django's
deploy checks with HTTPS forced (the local health probe excepted), and an idle session ends."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import time
from datetime import timedelta

import pytest
from axes.models import AccessAttempt, AccessFailureLog
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse

from tests.factories.governance import UserFactory
from tests.support.processes import BASE_DIR, PYTHON, database_url_of_tests

PASSWORD = "correct horse battery staple"
ATTACKER, OTHER_ADDRESS = "198.51.100.7", "203.0.113.20"
LOGIN_PAGES = ["/accounts/login/", "/admin/login/"]


def _login(client: Client, path: str, password: str, username: str = "rita", **extra: str):
    return client.post(path, {"username": username, "password": password}, **extra)


def _logged_in(response) -> bool:
    return response.status_code == 302 and "login" not in response["Location"]


@pytest.fixture
def rita(db):
    return UserFactory(username="rita", roles=["Reviewer"], is_staff=True)


# --- Login throttling ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_thirty_wrong_passwords_lock_out_even_the_right_one_until_the_cool_off_ends(client, rita, settings, path):
    settings.AXES_COOLOFF_TIME = timedelta(seconds=2)
    for attempt in range(30):
        response = _login(client, path, f"guess-{attempt}", REMOTE_ADDR=ATTACKER)
        assert not _logged_in(response)

    refused = _login(client, path, PASSWORD, REMOTE_ADDR=ATTACKER)
    assert refused.status_code == 429
    assert b"Too many failed logins" in refused.content
    assert "_auth_user_id" not in client.session

    time.sleep(2.5)  # the cool-off runs from the last attempt, the refused right one included
    assert _logged_in(_login(client, path, PASSWORD, REMOTE_ADDR=ATTACKER))


def test_the_lockout_starts_at_the_configured_failure_limit(client, rita, settings):
    for attempt in range(settings.LOGIN_FAILURE_LIMIT - 1):
        _login(client, "/accounts/login/", f"guess-{attempt}", REMOTE_ADDR=ATTACKER)
    assert _logged_in(_login(client, "/accounts/login/", PASSWORD, REMOTE_ADDR=ATTACKER))
    client.logout()

    for attempt in range(settings.LOGIN_FAILURE_LIMIT):
        _login(client, "/accounts/login/", f"guess-{attempt}", REMOTE_ADDR=ATTACKER)
    assert _login(client, "/accounts/login/", PASSWORD, REMOTE_ADDR=ATTACKER).status_code == 429


def test_a_guesser_locks_out_only_their_own_address_not_the_real_user(client, rita):
    for attempt in range(30):
        _login(client, "/accounts/login/", f"guess-{attempt}", REMOTE_ADDR=ATTACKER)

    assert _logged_in(_login(Client(), "/accounts/login/", PASSWORD, REMOTE_ADDR=OTHER_ADDRESS))


def test_one_guess_sprayed_across_many_usernames_is_throttled_per_address(client, rita, settings):
    """Per (username, address) alone, one password tried once on every account is never counted
    twice; the address's own limit stops it, for that address only."""
    for number in range(settings.LOGIN_ADDRESS_FAILURE_LIMIT):
        assert not _logged_in(
            _login(client, "/accounts/login/", "Winter2026!", username=f"user{number}", REMOTE_ADDR=ATTACKER)
        )

    sprayed = _login(client, "/accounts/login/", "Winter2026!", username="someone-else", REMOTE_ADDR=ATTACKER)
    assert sprayed.status_code == 429
    assert _login(Client(), "/accounts/login/", PASSWORD, REMOTE_ADDR=ATTACKER).status_code == 429
    assert _logged_in(_login(Client(), "/accounts/login/", PASSWORD, REMOTE_ADDR=OTHER_ADDRESS))


def test_the_address_limit_is_above_the_per_user_one(settings):
    """A shared office address must not lock out on a few people's typos: the address counts
    several users' worth of failures."""
    assert settings.LOGIN_ADDRESS_FAILURE_LIMIT >= 4 * settings.LOGIN_FAILURE_LIMIT


def test_a_forged_forwarded_for_does_not_buy_fresh_attempts_without_a_proxy(client, rita):
    for attempt in range(10):
        forged = f"10.0.0.{attempt}"
        _login(client, "/accounts/login/", f"guess-{attempt}", REMOTE_ADDR=ATTACKER, HTTP_X_FORWARDED_FOR=forged)

    response = _login(client, "/accounts/login/", PASSWORD, REMOTE_ADDR=ATTACKER, HTTP_X_FORWARDED_FOR="10.9.9.9")
    assert response.status_code == 429


def test_behind_the_proxy_the_address_it_appends_is_the_one_counted(client, rita, settings):
    settings.BEHIND_PROXY = True
    proxy = "127.0.0.1"
    for attempt in range(10):  # the client forges the left part; the proxy appends the real address
        forwarded = f"10.0.0.{attempt}, {ATTACKER}"
        _login(client, "/accounts/login/", f"guess-{attempt}", REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=forwarded)

    locked = _login(client, "/accounts/login/", PASSWORD, REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=ATTACKER)
    assert locked.status_code == 429
    assert AccessAttempt.objects.get().ip_address == ATTACKER
    other = _login(Client(), "/accounts/login/", PASSWORD, REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=OTHER_ADDRESS)
    assert _logged_in(other)


def test_failures_and_the_lockout_are_recorded_and_an_admin_can_unlock(client, rita, admin_client):
    for attempt in range(6):
        _login(client, "/accounts/login/", f"guess-{attempt}", REMOTE_ADDR=ATTACKER)

    attempt = AccessAttempt.objects.get(username="rita", ip_address=ATTACKER)
    assert attempt.failures_since_start >= 5
    assert AccessFailureLog.objects.filter(username="rita", ip_address=ATTACKER, locked_out=True).exists()
    assert "guess" not in attempt.post_data  # the guessed passwords are masked
    listing = admin_client.get(reverse("admin:axes_accessattempt_changelist"))
    assert listing.status_code == 200
    assert ATTACKER in listing.content.decode()

    deleted = admin_client.post(reverse("admin:axes_accessattempt_delete", args=[attempt.pk]), {"post": "yes"})
    assert deleted.status_code == 302

    assert _logged_in(_login(client, "/accounts/login/", PASSWORD, REMOTE_ADDR=ATTACKER))


# --- Content-Security-Policy --------------------------------------------------------------------

DIRECTIVES = [
    "default-src 'self'",
    "script-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
]


TEMPLATE_TAG = re.compile(r"{% comment %}.*?{% endcomment %}|{%.*?%}|{#.*?#}", re.DOTALL)


def _policy(response) -> str:
    return response.headers["Content-Security-Policy"]


@pytest.mark.parametrize("path", ["/accounts/login/", "/inbox/", "/contracts/", "/admin/", "/api/v1/health"])
def test_pages_and_api_answers_carry_the_policy(admin_client, path):
    policy = _policy(admin_client.get(path))

    assert all(directive in policy for directive in DIRECTIVES), policy
    assert "unsafe-inline" not in policy
    assert "unsafe-eval" not in policy


def test_api_errors_carry_the_policy_too(client, db):
    response = client.get("/api/v1/agents/agent.seo.vlevel", HTTP_AUTHORIZATION="Bearer gov_ag_not-a-key")

    assert response.status_code == 401
    assert all(directive in _policy(response) for directive in DIRECTIVES)


def test_no_template_has_inline_script_style_or_hx_on():
    """What the policy would refuse in a browser, caught in the source (template tags and comments
    set aside: `{% include ... style="approve" %}` passes a variable, not a style attribute)."""
    inline = re.compile(r"<script(?![^>]*\bsrc=)|<style\b|\sstyle=|\shx-on|\son[a-z]+=", re.IGNORECASE)
    offenders = [
        f"{path.relative_to(BASE_DIR)}: {match.group(0).strip()}"
        for path in (BASE_DIR / "templates").rglob("*.html")
        for match in inline.finditer(TEMPLATE_TAG.sub("", path.read_text(encoding="utf-8")))
    ]
    assert offenders == []


def test_the_periodic_task_form_runs_its_script_from_a_file(admin_client):
    """django-celery-beat ships this admin page with an inline script; ours loads it from /static/."""
    page = admin_client.get(reverse("admin:django_celery_beat_periodictask_add")).content.decode()

    assert 'id="periodic-task-overrides" src="/static/js/periodic-task-form.js"' in page
    assert not re.search(r"<script(?![^>]*\b(src=|application/json))", page)


# --- HTTPS in production -------------------------------------------------------------------------


def production_env(tmp_path) -> dict[str, str]:
    """What README's "Production" paragraph tells an operator to set."""
    # Only the operator's settings: not the test run's own (the browser tests allow async ORM calls).
    inherited = ("SECURE_", "SECRET_", "DJANGO_ALLOW_ASYNC_UNSAFE")
    child = {key: value for key, value in os.environ.items() if not key.startswith(inherited)}
    child.update(
        DJANGO_SETTINGS_MODULE="controlplane.settings",
        VAR_DIR=str(tmp_path),
        DATABASE_URL=database_url_of_tests(),
        SECRET_KEY=secrets.token_urlsafe(64),
        DEBUG="false",
        ALLOWED_HOSTS="ops.example.com",
        CSRF_TRUSTED_ORIGINS="https://ops.example.com",
        BEHIND_PROXY="true",
        SECURE_SSL_REDIRECT="true",
        SECURE_HSTS_SECONDS="31536000",
        SECURE_HSTS_INCLUDE_SUBDOMAINS="true",
        SECURE_HSTS_PRELOAD="true",
        SECURE_COOKIES="true",
        CELERY_BROKER_URL="redis://redis.internal:6379/0",
        NOTIFY_BASE_URL="https://ops.example.com",
    )
    return child


def test_the_production_environment_passes_the_deploy_checks(db, tmp_path):
    result = subprocess.run(
        [PYTHON, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=BASE_DIR,
        env=production_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_the_defaults_serve_plain_http_for_make_run(client, db, settings):
    assert not settings.SECURE_SSL_REDIRECT
    assert not settings.SESSION_COOKIE_SECURE
    assert client.get("/accounts/login/").status_code == 200
    assert client.get("/api/v1/health").status_code in (200, 503)


def test_with_https_forced_pages_redirect_but_the_local_health_probe_does_not(client, db, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True

    page = client.get("/accounts/login/")
    assert page.status_code == 301
    assert page["Location"].startswith("https://")
    assert client.get("/api/v1/health").status_code in (200, 503)  # not redirected
    assert client.get("/api/v1/health/live").status_code == 200
    assert client.get("/api/v1/health/ready").status_code in (200, 503)
    secure = client.get("/accounts/login/", secure=True)
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"


def test_behind_the_proxy_its_https_header_counts_and_a_forged_one_does_not_without_it(client, db, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https").status_code == 301

    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert client.get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https").status_code == 200


# --- Idle sessions -------------------------------------------------------------------------------


def test_a_session_idle_past_the_limit_is_sent_to_the_login_page(client, rita, settings):
    settings.SESSION_COOKIE_AGE = 2
    assert _logged_in(_login(client, "/accounts/login/", PASSWORD))
    assert client.get("/inbox/").status_code == 200

    time.sleep(2.5)
    response = client.get("/inbox/")

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_using_the_pages_keeps_the_session_but_the_inbox_refresh_does_not(client, rita, settings):
    settings.SESSION_COOKIE_AGE = 600
    settings.SESSION_IDLE_RENEW_SECONDS = 0
    assert _logged_in(_login(client, "/accounts/login/", PASSWORD))
    session = Session.objects.get(pk=client.session.session_key)

    time.sleep(0.05)
    assert client.get(reverse("reviews:inbox-pending"), HTTP_HX_REQUEST="true").status_code == 200
    assert Session.objects.get(pk=session.pk).expire_date == session.expire_date

    assert client.get("/inbox/").status_code == 200
    assert Session.objects.get(pk=session.pk).expire_date > session.expire_date


def test_page_views_write_the_session_at_most_once_a_minute(client, rita, settings):
    assert _logged_in(_login(client, "/accounts/login/", PASSWORD))
    session = Session.objects.get(pk=client.session.session_key)

    for _ in range(3):
        assert client.get("/inbox/").status_code == 200

    assert Session.objects.get(pk=session.pk).expire_date == session.expire_date  # the login counted


def test_the_default_idle_limit_is_the_session_lifetime(settings):
    assert settings.SESSION_COOKIE_AGE == settings.SESSION_IDLE_TIMEOUT_MINUTES * 60 == 30 * 60
    assert not settings.SESSION_SAVE_EVERY_REQUEST
