"""``celmut playground`` as its own process on a loopback port (``--port 0``), as a person starts it,
for the API tests and the browser tests."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
START_SECONDS = 60  # a fresh interpreter loading FastAPI on a loaded 2-core machine


def without_timings(value: Any) -> Any:
    """An answer with its ``seconds`` left out, to compare two runs of the same panes."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


@dataclass
class Playground:
    url: str
    process: subprocess.Popen[str]
    said: list[str]  # the lines it printed before its URL (the self-signed CA's path, the cluster)

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, **kwargs)

    def post(self, path: str, body: Any, **kwargs: Any) -> httpx.Response:
        with self.client() as client:
            return client.post(path, json=body, **kwargs)


@contextmanager
def playground(*flags: str, scheme: str = "http", package: Path = ROOT) -> Iterator[Playground]:
    """Start ``celmut playground --port 0 FLAGS`` and wait for its first line, which names its URL;
    ``package``: the directory holding the ``celmut`` package to run (a benchmark's other version)."""
    with tempfile.TemporaryFile("w+") as errors:  # a file, not a pipe: nothing blocks however much it logs
        yield from _started(errors, flags, scheme, package)


def _started(errors: IO[str], flags: tuple[str, ...], scheme: str, package: Path) -> Iterator[Playground]:
    process = subprocess.Popen(
        [sys.executable, "-m", "celmut", "playground", "--port", "0", "--examples", str(ROOT), *flags],
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
        cwd=package,  # ``-m`` imports from the working directory first
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + START_SECONDS
        url = ""
        said: list[str] = []
        while not url:
            line = process.stdout.readline()
            if not line and process.poll() is not None:
                errors.seek(0)
                raise AssertionError(f"playground exited {process.returncode}: {errors.read()}")
            assert time.monotonic() < deadline, "playground did not start"
            if line.startswith("celmut playground: ") and "://" in line.split()[2]:
                url = line.split()[2]
            else:
                said.append(line)
        assert url.startswith(f"{scheme}://127.0.0.1:")
        yield Playground(url, process, said)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec:\n  containers: [{name: app, image: nginx}]\n"


def pod_policy(name: str, expression: str, *, style: str = "|") -> str:
    """A MutatingPolicy (failurePolicy Fail) on Pod CREATE with one JSONPatch ``expression``, written as a
    block scalar of ``style`` (``|`` or ``>-``) at the line the tests locate errors on."""
    body = "".join(f"          {line}\n" for line in expression.splitlines())
    return f"""apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: {name}}}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}}]
  mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: {style}
{body}"""
