"""OpenTelemetry tracing of admissions and reconciles: optional, off by default, free when off.

Tracing is on when the ``tracing`` extra is installed (``pip install 'celmut[tracing]'``:
opentelemetry-api, -sdk and the OTLP/HTTP exporter) and the standard OpenTelemetry environment asks
for traces: ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set, or
``OTEL_TRACES_EXPORTER`` names an exporter (``otlp``, ``console``); ``OTEL_SDK_DISABLED=true`` or
``OTEL_TRACES_EXPORTER=none`` turns it off. Everything else — the service name and resource
(``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``), the sampler (``OTEL_TRACES_SAMPLER``), the
exporter's headers, timeout and protocol options, the batch processor — is read by the SDK from the
same variables, as any OpenTelemetry program reads them.

When tracing is off this module imports nothing from OpenTelemetry and the surfaces hold ``None``:
an admission pays one ``is None`` test (``benchmarks/tracing_bench.py``). When on,
:mod:`celmut.service.tracing_otel` records, after the fact (the evaluation itself is not slowed by
span bookkeeping):

* per admission a span ``admission`` (its parent: the API server's ``traceparent`` header, when
  kube-apiserver's APIServerTracing sends one), with one child span ``policy <name>`` per policy
  evaluated, laid out in evaluation order with the time each took;
* per controller reconcile a span ``reconcile`` with a child span per policy that changed or failed.

:func:`celmut.service.trace_records.evaluated_policies` is the one adapter from what the runtime
returns (``AdmissionResult`` outcomes) to those child spans; re-point it when the runtime reports
per-policy results otherwise.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from celmut.service.trace_records import AdmissionRecord, PolicyRun

log = logging.getLogger("celmut.tracing")

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
EXPORTERS = ("otlp", "console")


class Tracing(Protocol):
    """What the surfaces call; implemented by :class:`celmut.service.tracing_otel.OtelTracing`."""

    def admission(self, record: AdmissionRecord) -> None: ...

    def reconcile(
        self, started_ns: int, ended_ns: int, attributes: Mapping[str, str | int | bool], policies: Sequence[PolicyRun]
    ) -> None: ...

    def shutdown(self) -> None: ...


def requested(environ: Mapping[str, str]) -> bool:
    """Whether the OpenTelemetry environment asks for traces (see the module docstring)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return exporter in EXPORTERS or any(environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def from_environment(service_name: str, environ: Mapping[str, str] | None = None) -> Tracing | None:
    """The tracer of this process, or None when tracing is off or the extra is not installed (then
    a warning says so, when the environment asked for traces)."""
    environ = os.environ if environ is None else environ
    if not requested(environ):
        return None
    try:
        from celmut.service import tracing_otel
    except ImportError as ex:
        log.warning(
            "tracing requested by the OTEL_* environment but the tracing extra is not installed "
            "(pip install 'celmut[tracing]'): no spans are exported",
            extra={"error": str(ex)},
        )
        return None
    return tracing_otel.OtelTracing.create(service_name, environ)


def header_carrier(raw_headers: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    """The W3C trace context headers of an ASGI request (``traceparent``, ``tracestate``)."""
    found: dict[str, str] = {}
    for name, value in raw_headers:
        if name in (b"traceparent", b"tracestate"):
            found[name.decode("latin-1")] = value.decode("latin-1")
    return found


def attribute_value(value: Any) -> str | int | bool:
    return value if isinstance(value, (str, int, bool)) else str(value)
