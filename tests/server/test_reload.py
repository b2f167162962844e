"""Hot reload while serving: policy files (a broken change keeps the last good set) and the serving
certificate (a rotated certificate is used for new connections without a restart)."""

from __future__ import annotations

import shutil
import ssl
import time
from pathlib import Path

import httpx

from celmut.kube import certs
from tests.server.support import admission_request, decoded_patch, pod, running_server
from tests.waiting import eventually

LABEL_POLICY = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {{name: label}}
spec:
  autogen: {{podControllers: {{controllers: []}}}}
  matchConstraints:
    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}}]
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{{op: "add", path: "/metadata/labels/version", value: "{version}"}}]'
"""


def label_value(server) -> str | None:  # type: ignore[no-untyped-def]
    patch = decoded_patch(server.review(admission_request(pod())))
    return next((op["value"] for op in patch if op["path"] == "/metadata/labels/version"), None)


def test_policy_changes_are_picked_up_and_a_broken_file_keeps_the_last_good_set(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "label.yaml").write_text(LABEL_POLICY.format(version="one"))
    with running_server(tmp_path, [str(policies)]) as server:
        assert label_value(server) == "one"
        (policies / "label.yaml").write_text(LABEL_POLICY.format(version="two"))
        eventually(lambda: label_value(server) == "two")
        (policies / "broken.yaml").write_text(
            "apiVersion: policies.kyverno.io/v1\nkind: MutatingPolicy\nmetadata: {name: broken}\nspec: {matchConstraints: {}}\n"
        )
        eventually(lambda: any("broken" in e for e in server.store.last_errors))
        assert label_value(server) == "two"
        (policies / "label.yaml").write_text(
            LABEL_POLICY.format(version="three")
        )  # still rejected: broken.yaml remains
        time.sleep(0.5)
        assert label_value(server) == "two"
        (policies / "broken.yaml").unlink()
        eventually(lambda: label_value(server) == "three")
        with server.client() as client:
            metrics = client.get("/metrics").text
        assert 'celmut_policy_reloads_total{result="rejected"}' in metrics


def test_a_rotated_certificate_is_served_without_a_restart(tmp_path: Path) -> None:
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "label.yaml").write_text(LABEL_POLICY.format(version="one"))
    with running_server(tmp_path, [str(tmp_path / "policies")]) as server:
        rotated = certs.self_signed(tmp_path / "rotated", ["127.0.0.1", "localhost"])
        new_ca = ssl.create_default_context(cafile=str(rotated.ca_file))
        old_ca = ssl.create_default_context(cafile=str(server.ca_file))
        assert httpx.get(server.url + "/healthz", verify=old_ca).text == "ok"
        shutil.copy(rotated.key_file, server.cert_dir / "tls.key.new")
        shutil.copy(rotated.cert_file, server.cert_dir / "tls.crt.new")
        (server.cert_dir / "tls.key.new").replace(server.cert_dir / "tls.key")
        (server.cert_dir / "tls.crt.new").replace(server.cert_dir / "tls.crt")

        def served_by_new_ca() -> bool:
            try:
                return httpx.get(server.url + "/healthz", verify=new_ca).text == "ok"
            except httpx.HTTPError:
                return False

        eventually(served_by_new_ca)
        try:
            httpx.get(server.url + "/healthz", verify=old_ca)
            raise AssertionError("the old certificate is still served")
        except httpx.ConnectError:
            pass
