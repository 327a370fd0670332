"""`caller`: the one typed read of the principal an API key authenticated."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory

from governance.kernel.auth import caller
from governance.kernel.principals import Principal


def test_the_caller_is_the_principal_the_key_authenticated() -> None:
    request = RequestFactory().get("/api/v1/agents")
    principal = Principal()
    request.auth = principal  # type: ignore[attr-defined]  # what ninja does once a key class accepted the key
    assert caller(request) is principal


def test_an_endpoint_without_key_authentication_has_no_caller() -> None:
    """Never taken as an anonymous or system caller: the endpoint asking is a bug, raised."""
    request = RequestFactory().post("/api/v1/triggers/nightly/webhook")
    request.auth = None  # type: ignore[attr-defined]  # ninja's value on an ``auth=None`` route
    with pytest.raises(ImproperlyConfigured, match="no caller"):
        caller(request)
