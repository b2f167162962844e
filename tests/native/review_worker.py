"""Answer AdmissionReviews as the webhook does, in this process or as a worker process fed on stdin.

The differential tests (test_differential.py) run one side in the test process and the other in a
worker started with ``CELMUT_PURE=1`` from outside the checkout, so both sides are the installed
celmut: its compiled modules in the test process, their pure-Python sources in the worker. This file
imports celmut only, never ``tests``: run as a script, its directory (not the checkout) is first on
``sys.path``.

Protocol, one JSON object per line each way: ``{"policies": [...]}`` loads a policy set (answer:
``{"build": ...}``); ``{"body": <base64>, "group": <str|null>}`` answers one review (answer:
``{"status": <int>, "body": <base64>}``).
"""

from __future__ import annotations

import base64
import sys
import time
from typing import Any

import orjson

from celmut import cel
from celmut.compile.pipeline import compile_documents
from celmut.native import current_build
from celmut.runtime import AdmissionEngine
from celmut.server.admission import Admission
from celmut.server.metrics import Metrics
from celmut.service.assembly import assemble_engine
from celmut.service.settings import surface_engine
from celmut.sources.documents import Document


class Reviewer:
    """The webhook's whole per-request work (``Admission.answer``) for one policy set at a time."""

    def __init__(self) -> None:
        self.admission = Admission(Metrics(), None)
        self.engine: AdmissionEngine | None = None

    def load(self, policies: list[dict[str, Any]]) -> None:
        compilation = compile_documents(Document("policies.yaml", i, d) for i, d in enumerate(policies))
        if compilation.errors:
            raise ValueError(f"policy set does not compile: {compilation.errors}")
        self.engine = assemble_engine(compilation, surface_engine())

    def answer(self, body: bytes, group: str | None) -> tuple[int, bytes]:
        assert self.engine is not None, "load a policy set first"
        answer = self.admission.answer(body, self.engine, cel.Budget.with_timeout(60.0), group, time.perf_counter())
        return answer.status, answer.body


def main() -> None:
    reviewer = Reviewer()
    for line in sys.stdin.buffer:
        message = orjson.loads(line)
        if "policies" in message:
            reviewer.load(message["policies"])
            reply: dict[str, Any] = {"build": current_build().kind}
        else:
            status, body = reviewer.answer(base64.b64decode(message["body"]), message["group"])
            reply = {"status": status, "body": base64.b64encode(body).decode()}
        sys.stdout.buffer.write(orjson.dumps(reply) + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
