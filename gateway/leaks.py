"""Secrets in upstream tool results, found before the result reaches the agent.

An upstream tool answers with whatever its server reads: a config file with an AWS key, an error
page quoting a database URL with its password, an environment dump holding the plane's own
SECRET_KEY. The agent (and the model behind it) must not receive them, and the plane must not keep
them: so every text of a ``CallToolResult`` (text content, embedded resource text, the strings of
its structured content and of its ``_meta``, recursively) is scanned, and each secret found is
replaced by a marker, ``[redacted: <kind>]``. The upstream's operator chooses what the agent then
gets (``UpstreamServer.result_secrets``): the redacted result, a refusal, or the result unchanged
(only logged). Whatever was chosen, the plane keeps only the redacted copy and the kinds found.

Three kinds of detector, first match wins where they overlap:

1. The plane's own secrets, by value: SECRET_KEY, the database password, the metrics token, the
   mail and embedding credentials, every upstream's and provider profile's credential (the
   variables they name), however ordinary the value looks. Values shorter than
   ``OWN_SECRET_MIN_LENGTH`` are not looked for: a short password would redact every occurrence
   of a common word. API keys the plane issued are stored hashed, so they are found by their
   shape (``gov_<ag|op>_<12 hex>_<secret>``, governance/kernel/keys.py).
2. Known credential formats, with the detectors of detect-secrets (Yelp's maintained scanner):
   AWS, GitHub, GitLab, Slack, Stripe, OpenAI, private keys (the whole PEM block is redacted), JSON
   Web Tokens, passwords in URLs, and the others listed in ``KNOWN_FORMATS``. Only their patterns
   are used (``analyze_string``): never their ``verify`` step, which would send a found key to
   its provider, nor detect-secrets' process-wide settings.
3. High-entropy tokens, with detect-secrets' ``Base64HighEntropyString`` entropy (its default
   limit, 4.5 bits per character). detect-secrets looks only at quoted strings in source code;
   results are prose and JSON, so every run of base64/URL-safe characters is a candidate, and
   the limits that keep ordinary text out are ours: at least ``TOKEN_MIN_LENGTH`` (24)
   characters (a short word's base64 is shorter; a string's entropy cannot exceed log2 of its
   length, so 4.5 bits needs 23 distinct characters anyway), upper case, lower case and a digit
   all present (a random token of that length has all three almost always; words, paths,
   snake_case names, ULIDs and hex digests, UUIDs and our own ids, which are lower- or upper-case
   hex, never do), and not the payload of a ``base64,`` data URI (an inline image is no secret).
   A 40-character AWS secret access key or a 43-character ``token_urlsafe(32)`` is found; a
   random-looking public identifier of the same shape (a Google Drive file id) is found too:
   an upstream that returns such ids is one to set to "log".

Pure except ``own_secrets`` (settings, environment and rows) and ``check`` (which calls it).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector
from django.conf import settings

from gateway.models import UpstreamServer
from governance.kernel import secrets
from sessions.models import ProviderProfile

# Left out: the keyword detector (``password = ...`` in code: in prose it flags "password: see the
# wiki"), public IP addresses (no secret), and the IBM, Cloudant and Softlayer detectors, whose
# patterns take any 40-64 character word after "key", "cloud" or "api".
KNOWN_FORMATS: tuple[RegexBasedDetector, ...] = (
    AWSKeyDetector(),
    ArtifactoryDetector(),
    AzureStorageKeyDetector(),
    BasicAuthDetector(),
    DiscordBotTokenDetector(),
    GitHubTokenDetector(),
    GitLabTokenDetector(),
    JwtTokenDetector(),
    MailchimpDetector(),
    NpmDetector(),
    OpenAIDetector(),
    PrivateKeyDetector(),
    PypiTokenDetector(),
    SendGridDetector(),
    SlackDetector(),
    SquareOAuthDetector(),
    StripeDetector(),
    TelegramBotTokenDetector(),
    TwilioKeyDetector(),
)
# Their first group is the secret, the rest of the match its context ("aws_secret_key = '…'",
# "://user:…@", "//registry/:_authToken=…"); the other detectors' groups are mere prefixes (ghp|gho).
CAPTURED = (AWSKeyDetector, BasicAuthDetector, NpmDetector)
JWT_TAIL = re.compile(r"[A-Za-z0-9_=-]*")
ENTROPY = Base64HighEntropyString()  # detect-secrets' default limit: 4.5 bits per character
TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{24,}")
TOKEN_MIN_LENGTH = 24
DATA_URI = "base64,"
PEM_START = "-----BEGIN"
PEM_END = re.compile(r"-----END[A-Z0-9 ]*-----")
PLATFORM_KEY = re.compile(r"gov_(?:ag|op)_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}")
OWN_SECRET_MIN_LENGTH = 12

PLATFORM_SECRET_KIND = "Platform Secret"
PLATFORM_KEY_KIND = "Platform API Key"
ENTROPY_KIND = ENTROPY.secret_type
BLOCKED = "SecretInResult"


@dataclass(frozen=True)
class Finding:
    """One secret in one text: where it is, and its kind. ``secret`` (the value, for counting
    each secret once however often it appears) is never shown: not in repr, never stored."""

    kind: str
    start: int
    end: int
    secret: str = field(repr=False)


def _occurrences(text: str, value: str) -> Iterable[tuple[int, int]]:
    start = text.find(value)
    while value and start != -1:
        yield start, start + len(value)
        start = text.find(value, start + len(value))


def _pem_block(text: str, start: int, end: int) -> tuple[int, int]:
    """The private key's whole block around its header (the detector matches the header only);
    to the end of the text when it is cut short."""
    begin = text.rfind(PEM_START, max(0, start - len(PEM_START) - 1), end)
    closing = PEM_END.search(text, end)
    return (begin if begin != -1 else start), (closing.end() if closing else len(text))


def _matches(detector: RegexBasedDetector, text: str) -> Iterable[tuple[int, int]]:
    """Where the detector's patterns match, as positions, not values: a password in a URL may be
    ``x``, and redacting every ``x`` of the text is no redaction. The whole match, except where a
    pattern captures the secret among its context (``CAPTURED``); a JWT with its signature, which
    the detector's pattern leaves out."""
    for pattern in detector.denylist:
        for match in pattern.finditer(text):
            start, end = match.span(1) if pattern.groups and isinstance(detector, CAPTURED) else match.span()
            if isinstance(detector, JwtTokenDetector):
                if not detector.is_formally_valid(match.group()):
                    continue  # its own check: each part decodes
                end = JWT_TAIL.match(text, end).end()  # type: ignore[union-attr]  # it matches empty
            yield start, end


def _random_looking(text: str, start: int, token: str) -> bool:
    return (
        len(token) >= TOKEN_MIN_LENGTH
        and any(c.isupper() for c in token)
        and any(c.islower() for c in token)
        and any(c.isdigit() for c in token)
        and not text.endswith(DATA_URI, 0, start)
        and ENTROPY.calculate_shannon_entropy(token) > ENTROPY.entropy_limit
    )


def _candidates(text: str, own: Sequence[str]) -> Iterable[Finding]:
    """Every finding of every detector, in the order of precedence."""
    for secret in own:
        variants = {secret, json.dumps(secret)[1:-1]}  # as written, and as a JSON string holds it
        for variant in variants:
            for start, end in _occurrences(text, variant):
                yield Finding(PLATFORM_SECRET_KIND, start, end, secret)
    for match in PLATFORM_KEY.finditer(text):
        yield Finding(PLATFORM_KEY_KIND, match.start(), match.end(), match.group())
    for detector in KNOWN_FORMATS:
        for start, end in _matches(detector, text):
            if isinstance(detector, PrivateKeyDetector):
                start, end = _pem_block(text, start, end)
            yield Finding(detector.secret_type, start, end, text[start:end])
    for match in TOKEN.finditer(text):
        if _random_looking(text, match.start(), match.group()):
            yield Finding(ENTROPY_KIND, match.start(), match.end(), match.group())


def find(text: str, own: Sequence[str] = ()) -> list[Finding]:
    """The secrets in ``text``, without overlaps, in order; ``own`` are the plane's own secrets
    (values shorter than ``OWN_SECRET_MIN_LENGTH`` are ignored)."""
    own = sorted({s for s in own if len(s) >= OWN_SECRET_MIN_LENGTH}, key=len, reverse=True)
    kept: list[Finding] = []
    for candidate in _candidates(text, own):
        if all(candidate.end <= f.start or candidate.start >= f.end for f in kept):
            kept.append(candidate)
    return sorted(kept, key=lambda f: f.start)


def marker(kind: str) -> str:
    return f"[redacted: {kind}]"


def redact(text: str, findings: Sequence[Finding]) -> str:
    """``text`` with each finding (from ``find``) replaced by its marker."""
    parts, at = [], 0
    for finding in findings:
        parts += [text[at : finding.start], marker(finding.kind)]
        at = finding.end
    return "".join([*parts, text[at:]])


class _Redactor:
    """Redacts the texts of one result, noting each distinct secret once."""

    def __init__(self, own: Sequence[str]) -> None:
        self.own = own
        self.seen: set[tuple[str, str]] = set()

    def text(self, text: str) -> str:
        findings = find(text, self.own)
        self.seen.update((f.kind, f.secret) for f in findings)
        return redact(text, findings) if findings else text

    def value(self, value: Any) -> Any:
        """A JSON value with its strings redacted (keys are names, not data: left as they are)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value

    def block(self, block: types.ContentBlock) -> types.ContentBlock:
        """Text, and the text of an embedded resource; images, audio, blobs and links pass."""
        if isinstance(block, types.TextContent):
            return block.model_copy(update={"text": self.text(block.text)})
        if isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.TextResourceContents):
            resource = block.resource.model_copy(update={"text": self.text(block.resource.text)})
            return block.model_copy(update={"resource": resource})
        return block

    def found(self) -> dict[str, int]:
        return dict(sorted(Counter(kind for kind, _ in self.seen).items()))


@dataclass(frozen=True)
class Screened:
    """A tool result as the gateway lets it through (``result``: None when blocked), the copy the
    plane may keep (``stored``: always redacted), and how many distinct secrets of each kind it
    held (``found``: counts and detector names, never values)."""

    mode: str
    found: dict[str, int]
    result: types.CallToolResult | None
    stored: types.CallToolResult

    @property
    def count(self) -> int:
        return sum(self.found.values())

    @property
    def kinds(self) -> list[str]:
        return list(self.found)

    @property
    def blocked(self) -> bool:
        return self.result is None


def screen(result: types.CallToolResult, mode: str, own: Sequence[str] = ()) -> Screened:
    """``result`` scanned, and answered as ``mode`` says (redact, block, log) when it held secrets."""
    redactor = _Redactor(own)
    stored = result.model_copy(
        update={
            "content": [redactor.block(block) for block in result.content],
            "structured_content": redactor.value(result.structured_content),
            "meta": redactor.value(result.meta),
        }
    )
    found = redactor.found()
    if not found:
        return Screened(mode, found, result, result)
    modes = UpstreamServer.ResultSecrets
    passed: dict[str, types.CallToolResult | None] = {modes.REDACT: stored, modes.BLOCK: None, modes.LOG: result}
    return Screened(mode, found, passed[mode], stored)


@dataclass(frozen=True)
class SecretNames:
    """The variables the upstream servers and the provider profiles name, as read with a call's
    admission (gateway/forwarding.py ``admit``)."""

    upstreams: list[str]
    providers: list[str]


def own_secrets(names: SecretNames | None = None) -> list[str]:
    """The plane's own secrets as they are now: settings, and the credentials the upstream
    servers and provider profiles name (read from their variables, as they are sent); the names
    read now (two queries) unless the caller has them."""
    if names is None:
        names = SecretNames(
            list(UpstreamServer.objects.values_list("secret_name", flat=True)),
            list(ProviderProfile.objects.values_list("secret_name", flat=True)),
        )
    found = [
        settings.SECRET_KEY,
        settings.METRICS_TOKEN,
        settings.EMAIL_HOST_PASSWORD,
        settings.EMBEDDING_API_KEY,
        *(database.get("PASSWORD") or "" for database in settings.DATABASES.values()),
    ]
    named = [
        *((name, secrets.UPSTREAM_TOKEN_PREFIX) for name in names.upstreams),
        *((name, secrets.PROVIDER_KEY_PREFIX) for name in names.providers),
    ]
    found += [secrets.value(name, prefix=prefix) for name, prefix in set(named) if name]
    return [value for value in found if value]


def check(result: types.CallToolResult, mode: str, names: SecretNames | None = None) -> Screened:
    """``screen`` with the plane's own secrets (two queries, unless ``names`` are at hand)."""
    return screen(result, mode, own_secrets(names))
