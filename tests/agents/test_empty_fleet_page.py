"""The fleet page of a plane without agents says how to get one: the manifest upload in the admin,
`manage.py load_manifest`, the API call, and the seed's example manifest to start from."""

from __future__ import annotations

import pytest
import yaml
from django.urls import reverse

from agents.registry import load_manifest
from governance.kernel.principals import SYSTEM
from tests.factories.agents import AgentFactory
from tests.support.manifests import MANIFESTS

HTMX = {"HTTP_HX_REQUEST": "true"}
EXAMPLE = MANIFESTS / "agent.seo.vlevel.yaml"
HOWTO = "How to add an agent"


@pytest.mark.django_db
def test_the_empty_fleet_says_how_to_upload_a_manifest(client, staff_admin):
    client.force_login(staff_admin)

    html = client.get(reverse("agents:agent-list")).content.decode()

    assert HOWTO in html
    assert reverse("admin:agents_agentmanifest_upload") in html
    assert "manage.py load_manifest agent.seo.vlevel.yaml" in html
    assert "http://testserver/api/v1/agents/agent.seo.vlevel/manifest" in html
    assert "Content-Type: application/yaml" in html
    assert f'href="{reverse("agents:example-manifest")}"' in html
    howto = html[html.index(HOWTO) : html.index("</section>", html.index(HOWTO))]
    assert "style=" not in howto


@pytest.mark.django_db
def test_a_viewer_is_told_who_can_upload_instead_of_an_admin_link_they_cannot_use(client, viewer):
    client.force_login(viewer)

    html = client.get(reverse("agents:agent-list")).content.decode()

    assert HOWTO in html
    assert reverse("admin:agents_agentmanifest_upload") not in html
    assert "an Admin with access to the admin site uploads it" in html
    assert reverse("agents:example-manifest") in html


@pytest.mark.django_db
def test_the_htmx_swap_of_an_empty_fleet_carries_the_howto_too(client, viewer):
    client.force_login(viewer)

    partial = client.get(reverse("agents:agent-list"), **HTMX).content.decode()

    assert "<html" not in partial
    assert HOWTO in partial


@pytest.mark.django_db
def test_filters_that_match_no_agent_of_a_fleet_say_so_not_how_to_upload(client, viewer):
    AgentFactory(agent_id="agent.seo.vlevel")
    client.force_login(viewer)

    html = client.get(reverse("agents:agent-list"), {"role": "architect"}).content.decode()

    assert "No agents match these filters." in html
    assert HOWTO not in html


@pytest.mark.django_db
def test_once_a_manifest_is_loaded_the_howto_gives_way_to_the_agent(client, viewer):
    load_manifest(EXAMPLE.read_text(encoding="utf-8"), actor=SYSTEM)
    client.force_login(viewer)

    html = client.get(reverse("agents:agent-list")).content.decode()

    assert "<code>agent.seo.vlevel</code>" in html
    assert HOWTO not in html


@pytest.mark.django_db
def test_the_example_manifest_downloads_as_the_seed_wrote_it(client, viewer):
    client.force_login(viewer)

    response = client.get(reverse("agents:example-manifest"))

    assert response.status_code == 200
    assert response["Content-Type"] == "application/yaml; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="agent.seo.vlevel.yaml"'
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert body == EXAMPLE.read_bytes()
    assert yaml.safe_load(body)["Agent"]["id"] == "agent.seo.vlevel"


@pytest.mark.django_db
def test_the_example_manifest_loads_through_the_registry_unchanged(client, viewer):
    client.force_login(viewer)
    body = client.get(reverse("agents:example-manifest")).content.decode()

    manifest, created = load_manifest(body, actor=SYSTEM)

    assert (manifest.agent.agent_id, manifest.version, created) == ("agent.seo.vlevel", "1.0.0", True)


@pytest.mark.django_db
def test_the_example_manifest_is_for_signed_in_operators_only(client, outsider):
    url = reverse("agents:example-manifest")

    anonymous = client.get(url)
    client.force_login(outsider)
    no_role = client.get(url)

    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith(reverse("login"))
    assert no_role.status_code == 403


@pytest.mark.django_db
def test_the_empty_fleet_page_needs_few_queries(client, viewer, django_assert_max_num_queries):
    client.force_login(viewer)

    with django_assert_max_num_queries(10):
        assert client.get(reverse("agents:agent-list")).status_code == 200
