"""Deciding in the reviewer inbox as its page does: the form carries the hash of the content the
row shows (``shown``), which the decision binds to."""

from __future__ import annotations

from typing import Any

from django.test import Client
from django.urls import reverse

from governance.reviews.models import ReviewItem


def decide_in_inbox(client: Client, item_id: int, decision: str = "approve", **data: Any) -> Any:
    """POST one decision on the item as its row shows it now (``data``: comment, answer, headers)."""
    shown = ReviewItem.objects.get(pk=item_id).content_hash
    return client.post(reverse("reviews:inbox-decide", args=[item_id]), {"decision": decision, "shown": shown, **data})
