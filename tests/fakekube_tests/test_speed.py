"""Speed check (printed, not asserted): listing 10,000 pods and writing through the real client."""

from __future__ import annotations

import time

import pytest
from kubernetes.client import CoreV1Api

from tests.fakekube import FakeApiServer

from .manifests import pod

PODS = 10_000


def test_list_10000_pods(fake_apiserver: FakeApiServer, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.perf_counter()
    for i in range(PODS):
        fake_apiserver.store.create(pod(f"pod-{i:05d}", {"app": f"app-{i % 10}"}, namespace="bench"))
    setup = time.perf_counter() - started
    core = CoreV1Api(fake_apiserver.api_client())

    started = time.perf_counter()
    raw = core.list_namespaced_pod("bench", _preload_content=False)
    body = raw.data
    raw_list = time.perf_counter() - started

    started = time.perf_counter()
    typed = core.list_namespaced_pod("bench")
    typed_list = time.perf_counter() - started
    assert len(typed.items) == PODS

    started = time.perf_counter()
    selected = core.list_namespaced_pod("bench", label_selector="app=app-3")
    selector_list = time.perf_counter() - started
    assert len(selected.items) == PODS // 10

    writes = 300
    started = time.perf_counter()
    for i in range(writes):
        core.patch_namespaced_pod(f"pod-{i:05d}", "bench", {"metadata": {"labels": {"patched": "yes"}}})
    write_rate = writes / (time.perf_counter() - started)

    with capsys.disabled():
        print(
            f"\n[fakekube speed] {PODS} pods: in-process setup {setup:.2f}s; "
            f"list via client raw {raw_list * 1000:.0f} ms ({len(body) / 1e6:.1f} MB), "
            f"typed (client deserialization included) {typed_list:.2f}s, "
            f"label-selected 1/10 {selector_list * 1000:.0f} ms; "
            f"{write_rate:.0f} PATCH/s through the client"
        )
