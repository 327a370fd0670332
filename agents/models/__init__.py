from agents.models.agent import Agent, AgentManifest, ManifestKpi, ManifestTool
from agents.models.job import Escalation, IdempotencyKey, Job, JobArtifact
from agents.models.metrics import KpiAlert, KpiSample, ToolCall, ToolGrant
from agents.models.skill import Skill
from agents.models.trigger import JobTrigger

__all__ = [
    "Agent",
    "AgentManifest",
    "Escalation",
    "IdempotencyKey",
    "Job",
    "JobArtifact",
    "JobTrigger",
    "KpiAlert",
    "KpiSample",
    "ManifestKpi",
    "ManifestTool",
    "Skill",
    "ToolCall",
    "ToolGrant",
]
