"""The skill registry: what a manifest's ``skills[].skill_id`` refers to."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models

from agents.manifest import SEMVER_PATTERN

SKILL_ID_PATTERN = r"^[A-Za-z0-9_.:\-]+$"


class Skill(models.Model):
    """A capability an agent runs (seed 001: "Skills EXECUTENT"), with the tools it needs.

    One row per skill id, holding its current version: manifests name a skill, not a version, so
    what a manifest is checked against is what the registry says now. Skills are disabled, never
    deleted: manifests loaded earlier still name them.
    """

    skill_id = models.CharField(
        max_length=200,
        unique=True,
        validators=[RegexValidator(SKILL_ID_PATTERN, "Letters, digits and _ . : - only.")],
    )
    version = models.CharField(max_length=100, validators=[RegexValidator(SEMVER_PATTERN, "A semantic version.")])
    description = models.TextField(blank=True)
    tools = models.JSONField(default=list, blank=True, help_text="The tool ids this skill calls.")
    enabled = models.BooleanField(
        default=True, help_text="A disabled skill fails the check of every manifest that requires it."
    )
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["skill_id"]

    def __str__(self) -> str:
        return f"{self.skill_id} {self.version}"
