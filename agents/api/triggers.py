"""Job triggers' inbound webhooks (/api/v1/triggers): the one route of the API with no key. A
sender proves itself with the trigger's Standard Webhooks signature instead (agents/triggers.py)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Status

from agents import triggers
from agents.schemas import TriggeredJobOut
from governance.kernel import webhooks

router = Router(tags=["triggers"])

WEBHOOK_BODY = {
    "requestBody": {
        "required": False,
        "description": "A JSON object, merged into the payload of the job the trigger creates.",
        "content": {"application/json": {"schema": {"type": "object"}}},
    },
    "parameters": [
        {
            "in": "header",
            "name": webhooks.ID_HEADER,
            "required": True,
            "description": "The delivery's id, the same on every retry: one job per id.",
            "schema": {"type": "string"},
        },
        {
            "in": "header",
            "name": webhooks.TIMESTAMP_HEADER,
            "required": True,
            "description": "Unix seconds, within 5 minutes of the server's clock.",
            "schema": {"type": "string"},
        },
        {
            "in": "header",
            "name": webhooks.SIGNATURE_HEADER,
            "required": True,
            "description": 'v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" with the '
            "trigger's whsec_ secret> (Standard Webhooks; several separated by spaces)",
            "schema": {"type": "string"},
        },
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
    """Create the trigger's job from a delivery signed as Standard Webhooks says: 201, or 200 for
    a delivery already received (the same webhook-id); 401 unsigned, badly signed, or signed the
    retired X-Signature way; 404 no enabled webhook trigger of that name."""
    job, created = triggers.receive_webhook(name, request.body, headers=request.headers)
    return Status(201 if created else 200, {"jobId": job.job_id, "status": job.status})
