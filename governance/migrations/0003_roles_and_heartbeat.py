"""The Viewer / Reviewer / Admin groups and the heartbeat schedule."""

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.db import migrations
from django.utils import timezone

# Frozen here (governance.kernel.roles and .schedules as of issue 35): a migration does the same whatever the code becomes.
PRODUCT_APPS = ("governance", "agents", "ai_sessions", "memory", "gateway")
ADMIN_EXTRA_APPS = ("django_celery_beat", "axes")  # schedules; login lockouts (an Admin unlocks)
REVIEW_PERMISSIONS = ("decide_reviewitem",)
ROLES = ("Viewer", "Reviewer", "Admin")
SCHEDULES = [
    (
        "heartbeat",
        "governance.heartbeat",
        60,
        "Proves the beat -> broker -> worker path; its last run shows in /api/v1/health.",
    ),
]


def wanted_roles(codename, app_label):
    """Roles that should hold permission ``app_label.codename``."""
    roles = set()
    if app_label in PRODUCT_APPS and codename.startswith("view_"):
        roles |= {"Viewer", "Reviewer", "Admin"}
    if app_label in PRODUCT_APPS and codename in REVIEW_PERMISSIONS:
        roles |= {"Reviewer", "Admin"}
    if app_label in PRODUCT_APPS + ADMIN_EXTRA_APPS:
        roles.add("Admin")
    return roles


def sync_roles(apps):
    """The groups, each with the permissions its rule selects; every app's permissions are created
    first so the result does not depend on the order apps are migrated in."""
    for label in PRODUCT_APPS + ADMIN_EXTRA_APPS:
        create_permissions(global_apps.get_app_config(label), verbosity=0, apps=apps)
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    groups = {name: group_model.objects.get_or_create(name=name)[0] for name in ROLES}
    wanted = {name: [] for name in ROLES}
    permissions = permission_model.objects.filter(
        content_type__app_label__in=PRODUCT_APPS + ADMIN_EXTRA_APPS
    ).values_list("pk", "codename", "content_type__app_label")
    for pk, codename, app_label in permissions:
        for role in wanted_roles(codename, app_label):
            wanted[role].append(pk)
    for name, group in groups.items():
        group.permissions.add(*wanted[name])


def seed_schedules(apps):
    interval_model = apps.get_model("django_celery_beat", "IntervalSchedule")
    periodic_model = apps.get_model("django_celery_beat", "PeriodicTask")
    for name, task, every_seconds, description in SCHEDULES:
        interval, _ = interval_model.objects.get_or_create(every=every_seconds, period="seconds")
        periodic_model.objects.get_or_create(
            name=name, defaults={"task": task, "interval": interval, "enabled": True, "description": description}
        )
    # Tell a running beat to reload its schedule.
    changed_model = apps.get_model("django_celery_beat", "PeriodicTasks")
    changed_model.objects.update_or_create(ident=1, defaults={"last_update": timezone.now()})


def forwards(apps, schema_editor):
    sync_roles(apps)
    seed_schedules(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0002_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
