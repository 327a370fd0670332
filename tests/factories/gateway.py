"""Factories of the gateway app: upstream servers and the call log."""

from __future__ import annotations

import hashlib

import factory
from django.utils import timezone

from gateway.models import GatewayCall, UpstreamServer
from tests.factories.agents import AgentFactory


class UpstreamServerFactory(factory.django.DjangoModelFactory[UpstreamServer]):
    """An enabled Streamable HTTP upstream with no credential, at an address nothing answers on
    unless a test gives a real one (on this machine: so it is marked internal, as an operator
    marks a server on a private network)."""

    class Meta:
        model = UpstreamServer
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"upstream-{n}")
    url = factory.LazyAttribute(lambda o: f"http://{o.name}.invalid/mcp")
    internal = True


class GatewayCallFactory(factory.django.DjangoModelFactory[GatewayCall]):
    """A forwarded call that went well, now: ``mcp__<server>__execute_sql`` of its server, its
    arguments stored and hashed as the gateway does when GATEWAY_STORE_ARGUMENTS is on."""

    class Meta:
        model = GatewayCall

    agent = factory.SubFactory(AgentFactory)
    server = factory.SubFactory(UpstreamServerFactory)
    tool_id = factory.LazyAttribute(lambda o: f"mcp__{o.server.name if o.server else 'gone'}__execute_sql")
    arguments = factory.LazyFunction(lambda: {"query": "select 1"})
    arguments_hash = factory.LazyAttribute(lambda o: hashlib.sha256(repr(o.arguments).encode()).hexdigest())
    called_at = factory.LazyFunction(timezone.now)
    latency_ms = 12.0
    outcome = GatewayCall.Outcome.OK
