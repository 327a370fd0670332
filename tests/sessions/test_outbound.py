"""The outbound guard on its own: which URLs and addresses a provider call may reach. No database;
the resolver is a stand-in answering fixed addresses, so no test depends on real DNS."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

from sessions.providers.outbound import OutboundRefused, address_refusal, check


def resolver_of(*addresses: str) -> Any:
    """A getaddrinfo that answers ``addresses`` for any name, as a real one would shape them."""

    def resolve(host: str, port: int, **kwargs: Any) -> list[tuple[Any, ...]]:
        family = socket.AF_INET6
        return [
            (socket.AF_INET if "." in a and ":" not in a else family, socket.SOCK_STREAM, 6, "", (a, port))
            for a in addresses
        ]

    return resolve


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.10.10",
        "100.64.0.1",  # shared address space (carrier NAT)
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",  # IPv4-mapped loopback
        "::ffff:10.0.0.1",
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
    ],
)
def test_non_public_addresses_are_refused_unless_internal(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address), internal=False) is not None
    assert address_refusal(ipaddress.ip_address(address), internal=True) is None


@pytest.mark.parametrize(
    "address", ["169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe"]
)
def test_cloud_metadata_is_refused_even_for_an_internal_profile(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address), internal=True) == "a cloud metadata address"


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "1.1.1.1"])
def test_public_addresses_pass(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address), internal=False) is None


def test_a_public_https_url_is_pinned_to_its_checked_addresses() -> None:
    target = check("https://api.example.test/v1/", internal=False, resolver=resolver_of("93.184.216.34", "1.1.1.1"))

    assert (target.scheme, target.host, target.port, target.path) == ("https", "api.example.test", 443, "/v1/")
    assert target.addresses == ("93.184.216.34", "1.1.1.1")


def test_a_name_with_one_internal_address_among_public_ones_is_refused() -> None:
    with pytest.raises(OutboundRefused, match=r"api\.example\.test \(10\.0\.0\.7\) is a private address"):
        check("https://api.example.test", internal=False, resolver=resolver_of("93.184.216.34", "10.0.0.7"))


@pytest.mark.parametrize(
    ("url", "internal", "category"),
    [
        ("http://api.example.test", False, "refused_address"),  # plain http: internal profiles only
        ("file:///etc/passwd", True, "refused_address"),
        ("ftp://api.example.test", True, "refused_address"),
        ("api.example.test/v1", True, "refused_address"),  # no scheme at all
        ("https://user:secret@api.example.test", False, "configuration"),
        ("https://api.example.test/v1?key=secret", False, "configuration"),
        ("https:///v1", False, "configuration"),
        ("https://api.example.test:99999", False, "configuration"),
    ],
)
def test_urls_that_are_refused_before_any_lookup(url: str, internal: bool, category: str) -> None:
    def no_lookup(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("refused URLs are not resolved")

    with pytest.raises(OutboundRefused) as refused:
        check(url, internal=internal, resolver=no_lookup)

    assert refused.value.category == category


def test_plain_http_to_a_private_address_is_fine_for_an_internal_profile() -> None:
    target = check("http://ollama.lan:11434", internal=True, resolver=resolver_of("192.168.1.20"))

    assert (target.scheme, target.port, target.addresses) == ("http", 11434, ("192.168.1.20",))
