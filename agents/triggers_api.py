"""Job triggers' inbound webhooks (/api/v1/triggers): the one route of the API with no key. A
sender proves itself with the trigger's HMAC signature instead (agents/triggers.py)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Status

from agents import triggers
from agents.schemas import TriggeredJobOut

router = Router(tags=["triggers"])

WEBHOOK_BODY = {
    "requestBody": {
        "required": False,
        "description": "A JSON object, merged into the payload of the job the trigger creates.",
        "content": {"application/json": {"schema": {"type": "object"}}},
    },
    "parameters": [
        {"in": "header", "name": triggers.TIMESTAMP_HEADER, "required": True, "schema": {"type": "string"}},
        {
            "in": "header",
            "name": triggers.SIGNATURE_HEADER,
            "required": True,
            "description": 'sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" with the trigger\'s secret>',
            "schema": {"type": "string"},
        },
        {"in": "header", "name": triggers.DELIVERY_HEADER, "required": False, "schema": {"type": "string"}},
    ],
}


@router.post(
    "/{name}/webhook",
    operation_id="trigger_webhook",
    auth=None,
    response={200: TriggeredJobOut, 201: TriggeredJobOut},
    openapi_extra=WEBHOOK_BODY,
)
def trigger_webhook(request: HttpRequest, name: str) -> Status:
    """Create the trigger's job from a signed delivery: 201, or 200 for a delivery already
    received (the same X-Delivery-Id, or the same body without one); 401 unsigned or badly
    signed; 404 no enabled webhook trigger of that name."""
    job, created = triggers.receive_webhook(
        name,
        request.body,
        timestamp=request.headers.get(triggers.TIMESTAMP_HEADER),
        sent_signature=request.headers.get(triggers.SIGNATURE_HEADER),
        delivery=request.headers.get(triggers.DELIVERY_HEADER),
    )
    return Status(201 if created else 200, {"jobId": job.job_id, "status": job.status})
