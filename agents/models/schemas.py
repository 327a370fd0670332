"""The registry of named schemas: types that manifests name without defining them.

Seed 001's own example types its outputs with ``VLevelScoreSchema`` and never defines it. A
manifest's names resolve to its own ``schemas:`` section first, then to this registry (active
entries only), and a name that resolves nowhere refuses the manifest (agents/registry.py). The
definition is written in the same type language as a manifest's ``schemas:`` entry (agents/types.py):
a type expression, or a mapping of field -> type expression. Entries are never deleted: a stored
manifest keeps the definitions it resolved when it was stored (``AgentManifest.registry_schemas``),
so retiring or editing an entry changes only the manifests loaded afterwards. Written only through
agents/named_schemas.py (audited).
"""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models

from agents.types import SCHEMA_NAME

MAX_NAME_LENGTH = 100


class NamedSchema(models.Model):
    name = models.CharField(
        max_length=MAX_NAME_LENGTH,
        unique=True,
        validators=[RegexValidator(SCHEMA_NAME.pattern, "Use letters, digits and _, not starting with a digit.")],
        help_text="What manifests write in a type (VLevelScoreSchema). Never changes once added.",
    )
    definition = models.JSONField(
        help_text="A type expression (z.array(z.string())), or an object of field name -> type expression."
    )
    label = models.CharField(max_length=200, help_text="What pages and forms show.")
    description = models.TextField(blank=True, help_text="What a value of it is, for manifest authors.")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200)
    retired_at = models.DateTimeField(
        null=True, blank=True, help_text="Retired: manifests stored before keep it; new loads may not name it."
    )
    retired_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "named schema"

    def __str__(self) -> str:
        return self.name

    @property
    def retired(self) -> bool:
        return self.retired_at is not None
