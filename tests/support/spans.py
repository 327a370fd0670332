"""Reading the spans an in-memory exporter holds, as the telemetry tests do."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind


class Recorded:
    """The finished spans of one exporter."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.exporter = exporter

    def named(self, name: str, kind: SpanKind) -> list[ReadableSpan]:
        return [span for span in self.exporter.get_finished_spans() if span.name == name and span.kind == kind]

    def parent_of(self, span: ReadableSpan) -> ReadableSpan:
        """The span's parent, which must be in the same trace."""
        assert span.parent is not None, span.name
        parent_id = span.parent.span_id
        (found,) = [s for s in self.exporter.get_finished_spans() if s.context.span_id == parent_id]
        assert found.context.trace_id == span.context.trace_id
        return found
