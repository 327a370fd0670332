"""What agents measured (KPI samples) and did (tool calls)."""

from __future__ import annotations

from django.db import models


class KpiSample(models.Model):
    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="kpi_samples")
    metric_id = models.CharField(max_length=100)
    value = models.FloatField()
    recorded_at = models.DateTimeField()
    job = models.ForeignKey("agents.Job", null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["-recorded_at"]
        indexes = [models.Index(fields=["agent", "metric_id", "-recorded_at"], name="kpi_sample_series")]

    def __str__(self) -> str:
        return f"{self.metric_id}={self.value}"


class ToolCall(models.Model):
    """One call of a manifest tool, recorded by the agent before it makes the call."""

    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="tool_calls")
    tool_id = models.CharField(max_length=200)
    job = models.ForeignKey("agents.Job", null=True, blank=True, on_delete=models.PROTECT, related_name="tool_calls")
    called_at = models.DateTimeField()

    class Meta:
        ordering = ["-called_at"]
        indexes = [models.Index(fields=["agent", "tool_id", "-called_at"], name="tool_call_window")]

    def __str__(self) -> str:
        return f"{self.tool_id} at {self.called_at:%H:%M:%S}"
