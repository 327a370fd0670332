"""Provider profiles: hosted automations name an operator's profile instead of carrying a URL and
a key variable of their own.

Until now any agent could create an automation whose ``provider_config`` chose the ``base_url``
and the environment variable (``api_key_env``) the server sent as a bearer token: an agent could
make the server send ``DATABASE_URL`` to its own URL, or read internal addresses back. Those
configurations were chosen by agents, so none of them is carried into a profile:

* automations with ``provider`` openai, anthropic or ollama are left without a profile: they are
  simply not hosted anymore (the agent calls its model itself, as for any automation without a
  profile). An operator who wants one hosted again creates a profile (admin or API) and picks it
  on the automation in the admin. Each is recorded as an ``automation.unhosted`` audit row naming
  the former provider and model (never the config: it may hold a literal key).
* scripted automations created by the system (the demo loader) get a scripted profile of their
  own, ``migrated-scripted-<id>``, with their script: server-side demos keep running. Scripted
  automations created by anyone else are left without a profile, like the network ones.

Going backwards puts each automation's profile provider and options back into the two columns.
"""

import django.db.models.deletion
from django.db import migrations, models

SCRIPTED_OPTIONS = ("responses", "repeat_last", "network_errors_at", "simulate_actions")


def to_profiles(apps, schema_editor):
    automation_model = apps.get_model("ai_sessions", "Automation")
    profile_model = apps.get_model("ai_sessions", "ProviderProfile")
    audit_model = apps.get_model("governance", "AuditEvent")
    for automation in automation_model.objects.exclude(provider=""):
        config = automation.provider_config if isinstance(automation.provider_config, dict) else {}
        if automation.provider == "scripted" and automation.created_by == "system":
            profile = profile_model.objects.create(
                name=f"migrated-scripted-{automation.pk}",
                provider="scripted",
                options={key: config[key] for key in SCRIPTED_OPTIONS if key in config},
                created_by="system",
            )
            automation.profile = profile
            automation.save(update_fields=["profile"])
            continue
        model = config.get("model")
        audit_model.objects.create(
            actor="system",
            action="automation.unhosted",
            target_type="ai_sessions.automation",
            target_id=str(automation.pk),
            data={
                "provider": automation.provider,
                "model": model if isinstance(model, str) else "",
                "why": "provider configurations chosen through the API are not carried into provider profiles",
            },
        )


def to_columns(apps, schema_editor):
    automation_model = apps.get_model("ai_sessions", "Automation")
    for automation in automation_model.objects.filter(profile__isnull=False).select_related("profile"):
        automation.provider = automation.profile.provider
        automation.provider_config = dict(automation.profile.options)
        automation.save(update_fields=["provider", "provider_config"])


class Migration(migrations.Migration):
    dependencies = [
        ("ai_sessions", "0003_default_prompt_chunks_and_tick"),
        ("governance", "0002_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="ProviderProfile",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "name",
                    models.SlugField(help_text="What automations name (providerProfile)", max_length=100, unique=True),
                ),
                (
                    "provider",
                    models.CharField(
                        choices=[
                            ("openai", "Openai"),
                            ("anthropic", "Anthropic"),
                            ("ollama", "Ollama"),
                            ("scripted", "scripted (server-side demos and tests only)"),
                        ],
                        max_length=20,
                    ),
                ),
                ("model", models.CharField(blank=True, help_text="The provider's model name", max_length=200)),
                (
                    "base_url",
                    models.CharField(
                        blank=True,
                        help_text="Empty: the provider's default. https only, unless internal.",
                        max_length=500,
                    ),
                ),
                (
                    "secret_name",
                    models.CharField(
                        blank=True,
                        help_text="NAME of the environment variable holding the key (NAME_FILE is read too); never the key",
                        max_length=100,
                    ),
                ),
                (
                    "internal",
                    models.BooleanField(
                        default=False,
                        help_text="Allow plain http and private/loopback addresses (a model on the local network)",
                    ),
                ),
                (
                    "options",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text='e.g. {"temperature": 0.2, "max_tokens": 2048, "timeout": 60}',
                    ),
                ),
                ("enabled", models.BooleanField(default=True)),
                ("created_by", models.CharField(max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={"ordering": ["name"]},
        ),
        migrations.AddField(
            model_name="automation",
            name="profile",
            field=models.ForeignKey(
                blank=True,
                help_text="Set to host the session: the server calls this profile's model",
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="automations",
                to="ai_sessions.providerprofile",
            ),
        ),
        migrations.RunPython(to_profiles, to_columns),
        migrations.RemoveField(model_name="automation", name="provider"),
        migrations.RemoveField(model_name="automation", name="provider_config"),
    ]
