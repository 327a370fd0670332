"""The baseline view: what Django + gunicorn cost with no auth, no validation and no DB work."""

from django.http import HttpRequest, JsonResponse


def bare(request: HttpRequest) -> JsonResponse:
    """Answer a constant, so any time above this is ours (auth, envelope, SQL), not the stack's."""
    return JsonResponse({"ok": True})
