"""The three operator roles and the permissions each one holds.

Viewer reads everything; Reviewer also decides review items; Admin changes everything in the
product's apps and the maintenance schedules. The mapping is by rule, not by list, so models
added by later migrations fall into place (synced after every migrate).
"""

from __future__ import annotations

from typing import Any

PRODUCT_APPS = ("governance", "agents", "ai_sessions", "memory", "gateway")
# schedules; login lockouts (an Admin unlocks); OAuth clients and grants of /mcp (an Admin sees and revokes)
ADMIN_EXTRA_APPS = ("django_celery_beat", "axes", "oauth2_provider")
REVIEW_PERMISSIONS = ("decide_reviewitem",)
ROLES = ("Viewer", "Reviewer", "Admin")


def _wanted(codename: str, app_label: str) -> set[str]:
    """Roles that should hold permission ``app_label.codename``."""
    roles: set[str] = set()
    if app_label in PRODUCT_APPS and codename.startswith("view_"):
        roles |= {"Viewer", "Reviewer", "Admin"}
    if app_label in PRODUCT_APPS and codename in REVIEW_PERMISSIONS:
        roles |= {"Reviewer", "Admin"}
    if app_label in PRODUCT_APPS + ADMIN_EXTRA_APPS:
        roles.add("Admin")
    return roles


def sync(apps: Any) -> None:
    """Create the groups and add to each the permissions its rule selects (idempotent).

    Permissions are created by Django after migrations, app by app; we create those of every
    app first so the sync does not depend on the order apps are migrated in. Permissions an
    administrator added to a group by hand are left alone.
    """
    from django.apps import apps as global_apps
    from django.contrib.auth.management import create_permissions

    for label in PRODUCT_APPS + ADMIN_EXTRA_APPS:
        create_permissions(global_apps.get_app_config(label), verbosity=0, apps=apps)
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    groups = {name: group_model.objects.get_or_create(name=name)[0] for name in ROLES}
    wanted: dict[str, list[int]] = {name: [] for name in ROLES}
    permissions = permission_model.objects.filter(
        content_type__app_label__in=PRODUCT_APPS + ADMIN_EXTRA_APPS
    ).values_list("pk", "codename", "content_type__app_label")
    for pk, codename, app_label in permissions:
        for role in _wanted(codename, app_label):
            wanted[role].append(pk)
    for name, group in groups.items():
        group.permissions.add(*wanted[name])


def sync_after_migrate(sender: Any, apps: Any = None, **kwargs: Any) -> None:
    """After migrate (historical apps) and after a flush (which sends no `apps`: the live ones)."""
    if sender.label == "governance":
        from django.apps import apps as live_apps

        sync(apps or live_apps)
