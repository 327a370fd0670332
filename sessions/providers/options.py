"""What a provider profile may say, and what makes one unusable: the rules, pure (no Django).

A profile's ``options`` are free JSON an operator edits by hand, and they are merged into the
provider's config at call time. They must never become a second way to give a URL or a key (which
would bypass the outbound guard and the secret's indirection), so those keys are refused by name,
and each provider accepts only the options it actually reads.
"""

from __future__ import annotations

from typing import Any

from governance.kernel import secrets
from sessions.providers import anthropic, ollama, openai, outbound

DEFAULT_BASE_URLS = {
    "openai": openai.DEFAULT_BASE_URL,
    "anthropic": anthropic.DEFAULT_BASE_URL,
    "ollama": ollama.DEFAULT_BASE_URL,
}
# Keys that would route around the profile's own base_url / secret_name / internal columns.
FORBIDDEN_KEYS = frozenset({"base_url", "api_key", "api_key_env", "url", "internal"})
# Every call must end before the hosted call task's soft time limit (sessions/hosted.py).
MAX_TIMEOUT_SECONDS = 180
NETWORK_OPTIONS = frozenset({"temperature", "max_tokens", "timeout"})
ALLOWED_OPTIONS = {
    "openai": NETWORK_OPTIONS,
    "anthropic": NETWORK_OPTIONS,
    "ollama": NETWORK_OPTIONS,
    "scripted": frozenset({"responses", "repeat_last", "network_errors_at", "simulate_actions"}),
}


def option_errors(provider: str, options: Any) -> list[tuple[str, str]]:
    """(key, message) for each thing wrong with ``options``; empty when they are fine."""
    if not isinstance(options, dict):
        return [("", "options must be a JSON object")]
    errors: list[tuple[str, str]] = []
    allowed = ALLOWED_OPTIONS.get(provider, frozenset())
    for key in options:
        if key in FORBIDDEN_KEYS:
            errors.append(
                (key, f"{key!r} is never an option: use the profile's base URL, secret name and internal flag")
            )
        elif key not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            errors.append((key, f"{key!r} is not an option of {provider} (known: {known})"))
    timeout = options.get("timeout")
    valid = not isinstance(timeout, bool) and isinstance(timeout, int | float) and 0 < timeout <= MAX_TIMEOUT_SECONDS
    if "timeout" in options and not valid:
        errors.append(("timeout", f"timeout is a number of seconds, above 0 and at most {MAX_TIMEOUT_SECONDS}"))
    return errors


def profile_errors(
    *,
    provider: str,
    model: str,
    base_url: str,
    secret_name: str,
    internal: bool,
    options: Any,
    resolver: outbound.Resolver | None = None,
) -> dict[str, list[str]]:
    """Everything wrong with a profile, by field; empty when it may be saved.

    The base URL (or the provider's default when empty) goes through the outbound guard here, name
    resolution included, so an operator learns at once that an address is refused; the same check
    runs again at every call, since DNS answers change."""
    errors: dict[str, list[str]] = {}

    def add(field: str, message: str) -> None:
        errors.setdefault(field, []).append(message)

    for _key, message in option_errors(provider, options):
        add("options", message)
    secret_error = secrets.name_error(secret_name, prefix=secrets.PROVIDER_KEY_PREFIX)
    if secret_error:
        add("secret_name", secret_error)
    if provider == "scripted":
        if base_url or secret_name:
            add("base_url" if base_url else "secret_name", "a scripted profile calls nothing: no URL, no secret")
        return errors
    if not model:
        add("model", f"a {provider} profile needs a model")
    url = base_url or DEFAULT_BASE_URLS.get(provider, "")
    if url:
        try:
            outbound.check(url, internal=internal, resolver=resolver)
        except outbound.OutboundRefused as exc:
            add("base_url", f"{url}: {exc}")
        except (OSError, UnicodeError) as exc:
            add("base_url", f"{url}: the host name does not resolve ({exc})")
    return errors
