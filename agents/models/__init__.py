from agents.models.agent import Agent, AgentManifest, ManifestKpi, ManifestTool
from agents.models.job import Escalation, IdempotencyKey, Job, JobArtifact
from agents.models.metrics import KpiSample, ToolCall, ToolGrant
from agents.models.skill import Skill

__all__ = [
    "Agent",
    "AgentManifest",
    "Escalation",
    "IdempotencyKey",
    "Job",
    "JobArtifact",
    "KpiSample",
    "ManifestKpi",
    "ManifestTool",
    "Skill",
    "ToolCall",
    "ToolGrant",
]
