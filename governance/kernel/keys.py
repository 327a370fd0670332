"""API key format and hashing, and the derived secrets of webhooks (signed in webhooks.py). Pure functions, no Django.

A key reads ``gov_<kind>_<prefix>_<secret>``: the kind (``ag`` agent, ``op`` operator) makes a
leaked key recognisable in logs and secret scanners, the prefix is the database lookup handle,
and only the SHA-256 of the whole key is stored. Keys carry 256 bits of randomness, so a fast
hash is enough: there is nothing to brute-force.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

KIND_CODES = {"agent": "ag", "operator": "op"}
_CODE_KINDS = {code: kind for kind, code in KIND_CODES.items()}
PREFIX_LENGTH = 12


@dataclass(frozen=True)
class NewKey:
    plain: str
    prefix: str
    hashed: str


@dataclass(frozen=True)
class ParsedKey:
    kind: str
    prefix: str


def hash_key(plain: str) -> str:
    return hashlib.sha256(plain.encode("utf-8")).hexdigest()


def generate(kind: str) -> NewKey:
    prefix = secrets.token_hex(PREFIX_LENGTH // 2)
    plain = f"gov_{KIND_CODES[kind]}_{prefix}_{secrets.token_urlsafe(32)}"
    return NewKey(plain=plain, prefix=prefix, hashed=hash_key(plain))


def parse(plain: str) -> ParsedKey | None:
    parts = plain.split("_", 3)
    if len(parts) != 4 or parts[0] != "gov" or parts[1] not in _CODE_KINDS:
        return None
    if len(parts[2]) != PREFIX_LENGTH or not parts[3]:
        return None
    return ParsedKey(kind=_CODE_KINDS[parts[1]], prefix=parts[2])


def matches(plain: str, hashed: str) -> bool:
    return hmac.compare_digest(hash_key(plain), hashed)


def derived_secret(master: str, purpose: str) -> str:
    """A signing secret derived from the server's ``master`` key for one ``purpose`` (a row and its
    version): nothing to store, and bumping the version in ``purpose`` rotates it."""
    return hmac.new(master.encode(), purpose.encode(), hashlib.sha256).hexdigest()
