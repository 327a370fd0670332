"""A hostile sender against the inbound job-trigger webhook: deliveries it captured (a proxy log, a
receiver's request dump) must not turn into new jobs.

The legitimate sender signs with the official Standard Webhooks library (``standardwebhooks`` on
PyPI), as a trigger's sender would: the signature covers ``webhook-id``, so the idempotency key
the job is made under is the sender's own, and a replay cannot choose another.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import UTC, datetime

import pytest
from standardwebhooks import Webhook

from agents import triggers
from agents.models import Job, JobTrigger
from governance.kernel.principals import SYSTEM

pytestmark = pytest.mark.django_db


@pytest.fixture
def trigger(vlevel) -> JobTrigger:
    hook = JobTrigger(name="orders", agent=vlevel, kind="webhook", intent="seo_audit", entity_type="page")
    return triggers.save_trigger(hook, actor=SYSTEM, changed=[])


def signed(trigger: JobTrigger, message_id: str, body: bytes) -> dict[str, str]:
    """The headers the sender's Standard Webhooks library puts on a delivery."""
    now = datetime.now(tz=UTC)
    signature = Webhook(triggers.webhook_secret(trigger)).sign(message_id, now, body.decode())
    return {"webhook-id": message_id, "webhook-timestamp": str(int(now.timestamp())), "webhook-signature": signature}


def post(client, trigger: JobTrigger, body: bytes, headers: dict[str, str]):
    return client.post(
        f"/api/v1/triggers/{trigger.name}/webhook", data=body, content_type="application/json", headers=headers
    )


def test_captured_deliveries_resent_with_new_ids_create_no_job(client, trigger):
    captured = []
    for n in range(5):
        body = json.dumps({"urls": [f"https://shop.test/{n}"]}).encode()
        headers = signed(trigger, f"msg_{n}", body)
        assert post(client, trigger, body, headers).status_code == 201
        captured.append((body, headers))

    replays = [
        post(client, trigger, body, {**headers, "webhook-id": f"msg_{n}_again"})
        for n, (body, headers) in enumerate(captured)
    ]

    assert [r.status_code for r in replays] == [401] * 5
    assert {r["Content-Type"] for r in replays} == {"application/problem+json"}
    assert Job.objects.count() == 5


def test_the_same_delivery_sent_again_is_the_same_job(client, trigger):
    body = json.dumps({"urls": ["https://shop.test/a"]}).encode()
    headers = signed(trigger, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", body)

    first, again = post(client, trigger, body, headers), post(client, trigger, body, headers)

    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["jobId"] == again.json()["jobId"]
    assert Job.objects.get().idempotency_key == "trigger:orders:webhook:msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"


def test_the_retired_x_signature_scheme_is_refused_with_a_pointer_to_the_new_one(client, trigger):
    """The old scheme signed the body but not the delivery id: a delivery signed that way is 401,
    whatever it carries, and the answer says which headers to use."""
    body = b'{"urls": ["https://shop.test/a"]}'
    stamp = str(int(time.time()))
    old_secret = triggers.webhook_secret(trigger)
    digest = hmac.new(old_secret.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()

    response = post(
        client, trigger, body, {"X-Timestamp": stamp, "X-Signature": f"sha256={digest}", "X-Delivery-Id": "d-1"}
    )

    assert response.status_code == 401
    assert "webhook-signature" in response.json()["detail"]
    assert not Job.objects.exists()
