from agents.models.agent import Agent, AgentManifest, ManifestKpi, ManifestTool
from agents.models.job import Escalation, IdempotencyKey, Job, JobArtifact
from agents.models.metrics import KpiAlert, KpiSample, ToolCall, ToolGrant
from agents.models.registries import AgentRole, Domain, EntityType, Intent
from agents.models.schemas import NamedSchema
from agents.models.skill import Skill
from agents.models.trigger import JobTrigger

__all__ = [
    "Agent",
    "AgentManifest",
    "AgentRole",
    "Domain",
    "EntityType",
    "Escalation",
    "IdempotencyKey",
    "Intent",
    "Job",
    "JobArtifact",
    "JobTrigger",
    "KpiAlert",
    "KpiSample",
    "ManifestKpi",
    "ManifestTool",
    "NamedSchema",
    "Skill",
    "ToolCall",
    "ToolGrant",
]
