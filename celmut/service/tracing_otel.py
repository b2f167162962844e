"""The OpenTelemetry side of :mod:`celmut.service.tracing`: imported only when tracing is on.

Spans are recorded after the fact with their real start and end times, so nothing is added to the
evaluation itself. The exporter is OTLP over HTTP/protobuf (or the console, ``OTEL_TRACES_EXPORTER=
console``) behind a batch processor; both read their settings from the ``OTEL_*`` variables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from celmut import __version__
from celmut.service.trace_records import AdmissionRecord, PolicyRun

INSTRUMENTATION = "celmut"


def _exporter(environ: Mapping[str, str]) -> SpanExporter:
    if environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "console":
        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


class OtelTracing:
    """:class:`celmut.service.tracing.Tracing` over an SDK TracerProvider of its own."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer(INSTRUMENTATION, __version__)
        self.propagator = TraceContextTextMapPropagator()

    @classmethod
    def create(cls, service_name: str, environ: Mapping[str, str]) -> OtelTracing:
        named = environ.get("OTEL_SERVICE_NAME") or "service.name=" in environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
        resource = Resource.create({} if named else {SERVICE_NAME: service_name})  # OTEL_* attributes merged in
        provider = TracerProvider(resource=resource)  # the sampler: OTEL_TRACES_SAMPLER(_ARG)
        provider.add_span_processor(BatchSpanProcessor(_exporter(environ)))
        return cls(provider)

    def admission(self, record: AdmissionRecord) -> None:
        parent = self.propagator.extract(dict(record.headers)) if record.headers else None
        span = self.tracer.start_span(
            "admission", context=parent, kind=SpanKind.SERVER, start_time=record.started_ns,
            attributes=dict(record.attributes),
        )  # fmt: skip
        self._policies(span, record.evaluated_ns, record.policies)
        span.end(end_time=record.ended_ns)

    def reconcile(
        self, started_ns: int, ended_ns: int, attributes: Mapping[str, str | int | bool], policies: Sequence[PolicyRun]
    ) -> None:
        span = self.tracer.start_span("reconcile", kind=SpanKind.INTERNAL, start_time=started_ns, attributes=attributes)
        if attributes.get("celmut.reconcile.action") == "failed":
            span.set_status(Status(StatusCode.ERROR, str(attributes.get("celmut.reconcile.message", ""))))
        self._policies(span, started_ns, policies)
        span.end(end_time=ended_ns)

    def _policies(self, parent: trace.Span, start_ns: int, policies: Sequence[PolicyRun]) -> None:
        """One child span per policy, in evaluation order, each as long as it took."""
        context = trace.set_span_in_context(parent)
        at = start_ns
        for policy in policies:
            attributes: dict[str, str | int] = {
                "celmut.policy.name": policy.name,
                "celmut.policy.kind": policy.kind,
                "celmut.policy.result": policy.result,
                "celmut.policy.patch_operations": policy.patch_operations,
            }
            if policy.reason:
                attributes["celmut.policy.reason"] = policy.reason
            name = f"policy {policy.name}"
            child = self.tracer.start_span(name, context=context, start_time=at, attributes=attributes)
            if policy.result == "error":
                child.set_status(Status(StatusCode.ERROR, policy.reason))
            at += int(policy.seconds * 1e9)
            child.end(end_time=at)

    def shutdown(self) -> None:
        """Export what is buffered and stop (at process exit)."""
        self.provider.shutdown()
