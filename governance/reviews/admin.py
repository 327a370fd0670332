"""The inbox's items in the admin: read-only, since only a reviewer's decision changes them."""

from __future__ import annotations

from django.contrib import admin

from governance.kernel.admin import ReadOnlyAdmin
from governance.reviews.models import ReviewItem


@admin.register(ReviewItem)
class ReviewItemAdmin(ReadOnlyAdmin):
    list_display = ["title", "kind", "status", "agent", "created_at", "expires_at"]
    list_filter = ["status", "kind"]
