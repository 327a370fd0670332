"""Standard Webhooks (https://www.standardwebhooks.com/): how every webhook of the platform is
signed and checked, the job triggers' inbound ones and the notifications it sends. Pure: no Django.

A delivery carries three headers: ``webhook-id`` (the message's id, the same on every retry of
it), ``webhook-timestamp`` (Unix seconds) and ``webhook-signature``, ``v1,<base64 of the
HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`` (several, separated by spaces, while
a sender rotates its secret). The id is signed with the body on purpose: a receiver that makes
its idempotency key from it knows the sender chose it, so a captured delivery sent again under
another id does not verify, and sent again as it was is the same message. A secret reads
``whsec_<base64 of the key's bytes>``, the form the Standard Webhooks libraries take as it is,
so senders and receivers can use them instead of this module.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
TOLERANCE_SECONDS = 5 * 60
SECRET_PREFIX = "whsec_"


class SignatureRefused(Exception):
    """Why a delivery does not verify, in words the sender can act on (never the secret)."""


def secret_text(key: bytes) -> str:
    """A signing key as senders and receivers are given it: ``whsec_<base64>``."""
    return SECRET_PREFIX + base64.b64encode(key).decode()


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def signature(secret: str, message_id: str, timestamp: str, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256>`` of ``"<message_id>.<timestamp>.<body>"`` with ``secret``."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest()).decode()


def signed_headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three headers of a delivery of ``body`` sent at ``timestamp`` (Unix seconds)."""
    stamp = str(timestamp)
    return {
        ID_HEADER: message_id,
        TIMESTAMP_HEADER: stamp,
        SIGNATURE_HEADER: signature(secret, message_id, stamp, body),
    }


def verify(secret: str, headers: Mapping[str, str], body: bytes, *, now: float) -> str:
    """The ``webhook-id`` of a delivery signed with ``secret`` less than five minutes from ``now``
    (Unix seconds); SignatureRefused otherwise. One matching ``v1`` signature of the list is
    enough, as the standard says; others (a rotated secret's, another scheme's) are ignored.
    ``headers`` is looked up by the lower-case names: pass a case-insensitive mapping."""
    message_id, stamp, sent = (headers.get(name) for name in (ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER))
    if not (message_id and stamp and sent):
        raise SignatureRefused(
            f"Sign the request as Standard Webhooks says: {ID_HEADER}, {TIMESTAMP_HEADER} and {SIGNATURE_HEADER}."
        )
    if not stamp.isascii() or not stamp.isdigit():
        raise SignatureRefused(f"{TIMESTAMP_HEADER} is Unix seconds.")
    if abs(now - int(stamp)) > TOLERANCE_SECONDS:
        raise SignatureRefused(f"{TIMESTAMP_HEADER} is more than 5 minutes away from the server's clock.")
    expected = signature(secret, message_id, stamp, body).encode()
    if not any(hmac.compare_digest(expected, candidate.encode()) for candidate in sent.split()):
        raise SignatureRefused("The signature does not match.")
    return message_id
