"""Where the server may send a request on an operator's behalf: the outbound URL guard. No Django.

A hosted automation makes the server POST a prompt, with a provider key, to a base URL. Whoever
chooses that URL chooses where the key goes and what the server's network position can reach, so
every provider call passes through here, once when the operator saves a profile and again at
call time (DNS answers change between the two):

* schemes: ``https`` always, ``http`` only for a profile the operator marked ``internal``; nothing
  else (``file:``, ``ftp:``...) ever, since the HTTP client below speaks only HTTP.
* no credentials, query or fragment in the URL: a key belongs in the profile's secret, not in a URL
  that is stored in a row and written to logs.
* the host name is resolved first and every address it resolves to must be public: loopback,
  private, link-local, multicast, reserved, unspecified and shared addresses are refused unless
  the profile is internal. Cloud metadata endpoints are refused even then: no model server lives
  there, and they hand out the host's own credentials.
* the connection goes to one of the addresses that were checked (the name is not resolved a
  second time), keeping the host name for the Host header and TLS (SNI and certificate checks),
  so a DNS answer that changes between check and connect (rebinding) cannot redirect it.
* redirects are never followed: ``http.client`` does not follow them, and a 3xx answer is reported
  as an HTTP status error like any other refusal.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[..., Sequence[tuple[Any, ...]]]

# Cloud metadata services (AWS/GCP/Azure/OpenStack, AWS over IPv6, ECS task credentials, Alibaba).
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(address)
    for address in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200")
)
NAT64_PREFIX = ipaddress.ip_network("64:ff9b::/96")
_PROPERTIES = (
    ("is_loopback", "a loopback address"),
    ("is_private", "a private address"),
    ("is_link_local", "a link-local address"),
    ("is_multicast", "a multicast address"),
    ("is_reserved", "a reserved address"),
    ("is_unspecified", "an unspecified address"),
)


class OutboundRefused(Exception):
    """The destination may not be contacted. ``category`` is ``refused_address`` (the guard said
    no) or ``configuration`` (the URL itself is unusable)."""

    def __init__(self, message: str, category: str = "refused_address") -> None:
        super().__init__(message)
        self.category = category


@dataclass(frozen=True)
class Target:
    """A checked destination: the URL's parts, and the addresses it may be reached at."""

    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]


def split(url: str, *, internal: bool) -> tuple[str, str, int, str]:
    """(scheme, host, port, path) of an allowed URL, before any name resolution."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise OutboundRefused(f"not a valid URL: {exc}", "configuration") from exc
    scheme = parts.scheme.lower()
    allowed = ("https", "http") if internal else ("https",)
    if scheme not in allowed:
        if scheme == "http":
            raise OutboundRefused("plain http is allowed only for an internal profile; use https")
        raise OutboundRefused(f"the {scheme or 'missing'!s} scheme is never allowed; use https")
    if not parts.hostname:
        raise OutboundRefused("the URL has no host name", "configuration")
    if parts.username is not None or parts.password is not None:
        raise OutboundRefused("credentials in the URL are not allowed: name a secret instead", "configuration")
    if parts.query or parts.fragment:
        raise OutboundRefused("a base URL takes no query string or fragment", "configuration")
    return scheme, parts.hostname, port or (443 if scheme == "https" else 80), parts.path or "/"


def address_refusal(address: IPAddress, *, internal: bool) -> str | None:
    """What makes ``address`` off limits ("a loopback address"...), or None. IPv6 forms that embed
    an IPv4 address (mapped, NAT64, 6to4, Teredo) are judged by the embedded address too."""
    for candidate in _with_embedded(address):
        if candidate in METADATA_ADDRESSES:
            return "a cloud metadata address"
        if internal:
            continue
        for attribute, label in _PROPERTIES:
            if getattr(candidate, attribute):
                return label
        if not candidate.is_global:
            return "not a public address"
    return None


def _with_embedded(address: IPAddress) -> list[IPAddress]:
    found: list[IPAddress] = [address]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            found.append(address.ipv4_mapped)
        if address.sixtofour is not None:
            found.append(address.sixtofour)
        if address.teredo is not None:
            found.extend(address.teredo)
        if address in NAT64_PREFIX:
            found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def resolve(host: str, port: int, resolver: Resolver | None = None) -> tuple[str, ...]:
    """Every address ``host`` resolves to, in the resolver's order, without repeats.

    ``socket.gaierror`` (no such name, resolver down) is left to the caller: at call time it is
    a network failure, at save time a reason to refuse the profile."""
    addresses: list[str] = []
    answers = (resolver or socket.getaddrinfo)(host, port, type=socket.SOCK_STREAM)
    for _family, _type, _proto, _canon, sockaddr in answers:
        text = str(ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0]))
        if text not in addresses:
            addresses.append(text)
    if not addresses:
        raise socket.gaierror(f"{host} resolves to no address")
    return tuple(addresses)


def check(url: str, *, internal: bool, resolver: Resolver | None = None) -> Target:
    """The checked Target of ``url``; OutboundRefused when any of it is not allowed.

    Every address the name resolves to must pass, not just the first: a name answering one public
    and one internal address would otherwise reach the internal one on a retry."""
    scheme, host, port, path = split(url, internal=internal)
    addresses = resolve(host, port, resolver)
    for address in addresses:
        reason = address_refusal(ipaddress.ip_address(address), internal=internal)
        if reason:
            shown = address if host == address else f"{host} ({address})"
            raise OutboundRefused(f"{shown} is {reason}: refused" + ("" if internal else " (not an internal profile)"))
    return Target(scheme=scheme, host=host, port=port, path=path, addresses=addresses)


class _Pinned:
    """Connects to the checked addresses only; ``self.host`` stays the name (Host header, SNI)."""

    addresses: tuple[str, ...] = ()

    def _connect_checked(
        self, address: tuple[str, int], timeout: Any = None, source_address: Any = None
    ) -> socket.socket:
        error: OSError | None = None
        for ip in self.addresses:
            try:
                return socket.create_connection((ip, address[1]), timeout, source_address)
            except OSError as exc:
                error = exc
        raise error or OSError("no checked address to connect to")


class PinnedHTTPConnection(_Pinned, http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.addresses = target.addresses
        self._create_connection = self._connect_checked


class PinnedHTTPSConnection(_Pinned, http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout, context=ssl.create_default_context())
        self.addresses = target.addresses
        self._create_connection = self._connect_checked


def connection(target: Target, timeout: float) -> http.client.HTTPConnection:
    """An unopened connection to ``target`` that can reach only its checked addresses."""
    if target.scheme == "https":
        return PinnedHTTPSConnection(target, timeout)
    return PinnedHTTPConnection(target, timeout)
