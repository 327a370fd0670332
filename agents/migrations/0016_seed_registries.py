"""The seeds' closed lists (the StrEnums AgentRole, Domain, JobIntent and EntityType the code had
until the registries) as the registries' first values, so every agent, job, learning and trigger
stored before keeps a registered value. The values are written out here, not imported: a
migration must do the same thing whatever the code becomes."""

from django.db import migrations

SEED = {
    "Domain": [
        ("core", "Core"),
        ("infra", "Infra"),
        ("data", "Data"),
        ("seo", "SEO"),
        ("rag", "RAG"),
        ("cart", "Cart"),
        ("aicos", "AICOS"),
    ],
    "Intent": [
        ("seo_audit", "SEO audit"),
        ("content_generate", "Content generation"),
        ("rag_reindex", "RAG reindex"),
        ("kg_diagnose", "Knowledge graph diagnosis"),
        ("routes_sync", "Routes sync"),
        ("sitemap_build", "Sitemap build"),
    ],
    "EntityType": [
        ("gamme", "Gamme"),
        ("vehicle", "Vehicle"),
        ("article", "Article"),
        ("page", "Page"),
        ("all", "All"),
    ],
    "AgentRole": [
        ("architect", "Architect"),
        ("analyzer", "Analyzer"),
        ("executor", "Executor"),
        ("validator", "Validator"),
        ("orchestrator", "Orchestrator"),
    ],
}


def seed(apps, schema_editor):
    for model_name, values in SEED.items():
        model = apps.get_model("agents", model_name)
        model.objects.bulk_create(
            [model(value=value, label=label, created_by="system") for value, label in values], ignore_conflicts=True
        )


class Migration(migrations.Migration):
    dependencies = [("agents", "0015_registries")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
