"""A small runner for Kyverno's chainsaw tests (kyverno/chainsaw ``Test`` v1alpha1), run unchanged
against the fake API server with celmut in the loop (:mod:`tests.chainsaw.celmut_cluster`).

What it does of chainsaw (docs: chainsaw.kyverno.io, "Operations"):

* steps in order; a step's ``try`` operations in order; ``use.template`` step templates (path relative
  to the test, ``with.bindings`` as ``($name)`` values);
* ``apply`` (create, or merge-patch what exists), ``create``, ``patch`` (merge patch), ``delete``; an
  operation's ``expect`` (``match``, ``check`` with ``$error`` bound: ``($error != null): true`` is "the
  API server refused it"), else the operation must succeed;
* ``assert``: until one object of the kind (by name when the file names it, else every one in the
  namespace) matches the file (:mod:`tests.chainsaw.assertions`), within the operation's ``timeout``;
  ``error``: until none does;
* namespaced objects without a namespace go to the test's own namespace (chainsaw creates one per test);
* ``sleep``: chainsaw gives Kyverno wall-clock time; here the cluster is settled instead (conditions,
  :meth:`~tests.chainsaw.celmut_cluster.CelmutCluster.settle`); ``assert``/``error`` settle first too;
* ``script``: run with ``bash`` and ``kubectl`` against the cluster (``$KUBECONFIG``, ``$NAMESPACE`` as chainsaw
  sets them) when the run has a kubeconfig and kubectl is installed; otherwise not run, and the test says so;
* ``create`` with ``expect`` ``($error != null)``: the write must fail (or succeed);
* ``delete`` of a ``ref`` (apiVersion, kind, name);
* afterwards (:meth:`Run.cleanup`), what the test created is deleted and waited for, as chainsaw does.

Two kinds of declared adjustments, each with its reason, reported by :class:`Run`:

* :data:`DIVERGENCES` — where celmut is deliberately not Kyverno (its own reports' ``managed-by``
  label, its own policy status conditions, its own Events' component): the expectation is translated,
  never dropped;
* a file the index of upstream sources stores once for identical content (``dedup.yaml``) is read from
  the sibling test that holds it.

celmut runs with its defaults here, which post Events as Kyverno does (one per object).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

from tests.chainsaw.assertions import bound, expression_of, mismatches

Obj = dict[str, Any]
DATA = Path(__file__).resolve().parents[1] / "data" / "kyverno-chainsaw"
CHAINSAW = DATA / "test" / "conformance" / "chainsaw"
DEFAULT_TIMEOUT = 30.0  # chainsaw's default assert/error timeout
SETTLED_GRACE = 3.0  # once celmut has settled, how long a check still waits for the answer to change


def _dedup() -> dict[str, str]:
    document = yaml.safe_load((DATA / "dedup.yaml").read_text()) or {}
    return dict(document.get("files") or {})


# --- declared divergences: celmut is not Kyverno here, on purpose ------------------------------------


def _report_label(doc: Obj) -> str | None:
    """Issue 28: celmut's reports are ``app.kubernetes.io/managed-by: celmut`` (Kyverno's are
    ``kyverno``), so next to Kyverno neither ever takes the other's report for its own."""
    if not str(doc.get("apiVersion", "")).startswith("wgpolicyk8s.io/"):
        return None
    labels = (doc.get("metadata") or {}).get("labels") or {}
    if labels.get("app.kubernetes.io/managed-by") != "kyverno":
        return None
    labels["app.kubernetes.io/managed-by"] = "celmut"
    return "report label app.kubernetes.io/managed-by: kyverno -> celmut (celmut's own reports)"


def _policy_conditions(doc: Obj) -> str | None:
    """Kyverno's MutatingPolicy status holds the conditions of Kyverno's own controllers
    (``WebhookConfigured`` from pkg/controllers/webhook, ``RBACPermissionsGranted`` from its reports
    controller); celmut says a policy is in service with ``conditionStatus.ready`` and its own
    ``celmut.io/Compiled`` condition (celmut/kube/policy_status.py). Readiness is what is asserted."""
    if doc.get("kind") not in ("MutatingPolicy", "NamespacedMutatingPolicy"):
        return None
    holder = (doc.get("status") or {}).get("conditionStatus")
    if not isinstance(holder, dict) or not any(
        k == "conditions" or (expression_of(k) or "").lstrip().startswith(("conditions", "length(conditions"))
        for k in holder
    ):
        return None
    doc["status"]["conditionStatus"] = {"ready": holder.get("ready", True)}
    return "MutatingPolicy readiness: Kyverno's WebhookConfigured/RBACPermissionsGranted -> conditionStatus.ready"


def _event_component(doc: Obj) -> str | None:
    """celmut's Events name celmut's components: the background scan's PolicyViolation Events come from
    ``celmut-scan`` where Kyverno's come from ``kyverno-scan`` (celmut/controller/violation_events.py)."""
    if doc.get("kind") != "Event" or doc.get("reportingComponent") != "kyverno-scan":
        return None
    doc["reportingComponent"] = "celmut-scan"
    return "Event reportingComponent kyverno-scan -> celmut-scan (celmut's own component)"


DIVERGENCES: tuple[Callable[[Obj], str | None], ...] = (_report_label, _policy_conditions, _event_component)


# --- the run -----------------------------------------------------------------------------------------


class ChainsawCluster(Protocol):
    """What a run needs of the cluster: a client, and a way to wait until celmut has done its work."""

    client: Any  # kubernetes.dynamic.DynamicClient

    def settle(self, timeout: float = 30.0) -> None: ...


@dataclass
class Run:
    """One chainsaw test run against ``cluster``; ``notes`` says what was adjusted or not run, and why."""

    test_dir: Path
    cluster: ChainsawCluster
    namespace: str
    skipped_operations: dict[str, str] = field(default_factory=dict)  # "<step>/<file>" -> why not run
    notes: list[str] = field(default_factory=list)
    kubeconfig: Path | None = None  # scripts run with kubectl against the cluster when given (and installed)
    # a shared real cluster: what each written document needs (a label scoping the run), with its note
    prepare: Callable[[Obj], str | None] | None = None
    created: list[tuple[str, str, str, str | None]] = field(default_factory=list)  # apiVersion, kind, name, ns
    errors: list[str] = field(default_factory=list)  # "<step>/<file>: message" of operations expected to fail

    def run(self) -> None:
        document = yaml.safe_load((self.test_dir / "chainsaw-test.yaml").read_text())
        assert document["kind"] == "Test", document["kind"]
        self._ensure_namespace()
        for step in document["spec"]["steps"]:
            operations, base, bindings = self._operations(step)
            for operation in operations:
                self._operate(step.get("name", ""), operation, base, bindings)

    # --- steps and files ---------------------------------------------------------------------------

    def _operations(self, step: Obj) -> tuple[list[Obj], Path, dict[str, Any]]:
        if "use" not in step:
            return list(step.get("try") or []), self.test_dir, {}
        use = step["use"]
        template_path = (self.test_dir / use["template"]).resolve()
        template = yaml.safe_load(template_path.read_text())
        assert template["kind"] == "StepTemplate", template_path
        bindings = {b["name"]: b["value"] for b in (use.get("with") or {}).get("bindings") or []}
        return list(template["spec"].get("try") or []), self.test_dir, bindings

    def _file(self, base: Path, name: str) -> Path:
        path = (base / name).resolve()
        if path.exists():
            return path
        relative = path.relative_to(CHAINSAW.resolve()).as_posix()
        sibling = _dedup().get(relative)
        assert sibling is not None, f"{relative}: not stored and not in dedup.yaml"
        self.notes.append(f"{relative}: read from {sibling} (stored once for identical content)")
        return CHAINSAW / sibling

    def _documents(self, operation: Obj, base: Path, bindings: dict[str, Any]) -> tuple[str, list[Obj]]:
        if "ref" in operation:  # delete: apiVersion, kind, name (and namespace)
            ref = operation["ref"]
            meta = {k: ref[k] for k in ("name", "namespace") if k in ref}
            return f"{ref['kind']}/{ref['name']}", [
                {"apiVersion": ref["apiVersion"], "kind": ref["kind"], "metadata": meta}
            ]
        if "resource" in operation:
            return "(inline)", [bound(copy.deepcopy(operation["resource"]), bindings)]
        name = bound(operation["file"], bindings)
        path = self._file(base, name)
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
        return name, [bound(d, bindings) for d in documents]

    # --- operations --------------------------------------------------------------------------------

    def _operate(self, step: str, operation: Obj, base: Path, bindings: dict[str, Any]) -> None:
        (verb, spec), *rest = [(k, v) for k, v in operation.items() if k not in ("description", "name")]
        assert not rest, f"one operation at a time: {operation}"
        if verb == "sleep":
            self.cluster.settle()
            return
        if verb == "script":
            self._script(step, spec)
            return
        name, documents = self._documents(spec, base, bindings)
        key = f"{step}/{name}"
        if key in self.skipped_operations:
            return
        timeout = _seconds(spec.get("timeout")) or DEFAULT_TIMEOUT
        for document in documents:
            if verb in ("apply", "create", "patch"):
                self._expect(key, spec, document, lambda d=document: self._write(verb, d))
            elif verb == "delete":
                self._delete(document)
            elif verb in ("assert", "error"):
                self._check(verb, key, self._translated(document), timeout)
            else:
                raise NotImplementedError(f"chainsaw operation {verb!r} ({key})")

    def _expect(self, key: str, spec: Obj, document: Obj, operation: Callable[[], None]) -> None:
        """Run ``operation`` and check the operation's ``expect`` (chainsaw "Operation checks"): each
        expectation whose ``match`` the resource satisfies (all, without one) checks its assertion tree
        against the resource with ``$error`` bound to the error (the API server's message, or null). When
        none applies, chainsaw's default holds: ``($error == null): true``."""
        error: str | None = None
        try:
            operation()
        except ApiException as ex:
            error = _api_message(ex)
        expectations = [e for e in spec.get("expect") or [] if not mismatches(e.get("match") or {}, document)]
        if not expectations and error is not None:
            raise AssertionError(f"{key}: {error}")
        for expectation in expectations:
            failed = mismatches(expectation.get("check") or {}, document, bindings={"error": error})
            if failed:
                raise AssertionError(f"{key}: expectation not met ($error = {error!r}):\n  " + "\n  ".join(failed))
        if error is not None:
            self.errors.append(f"{key}: {error}")

    def _translated(self, document: Obj) -> Obj:
        out = copy.deepcopy(document)
        for divergence in DIVERGENCES:
            note = divergence(out)
            if note is not None and note not in self.notes:
                self.notes.append(note)
        return out

    def _resource(self, document: Obj) -> Any:
        return self.cluster.client.resources.get(api_version=document["apiVersion"], kind=document["kind"])

    def _namespace_of(self, resource: Any, document: Obj) -> str | None:
        if not resource.namespaced:
            return None
        return str((document.get("metadata") or {}).get("namespace") or self.namespace)

    def _write(self, verb: str, document: Obj) -> None:
        if self.prepare is not None:
            document = copy.deepcopy(document)
            note = self.prepare(document)
            if note is not None and note not in self.notes:
                self.notes.append(note)
        resource = self._resource(document)
        namespace = self._namespace_of(resource, document)
        name = document["metadata"]["name"]
        if verb == "create":
            resource.create(body=document, namespace=namespace)
            self.created.append((document["apiVersion"], document["kind"], name, namespace))
            return
        try:
            resource.get(name=name, namespace=namespace)
        except NotFoundError:
            assert verb == "apply", f"patch: {document['kind']} {name} not found"
            resource.create(body=document, namespace=namespace)
            self.created.append((document["apiVersion"], document["kind"], name, namespace))
            return
        resource.patch(body=document, name=name, namespace=namespace, content_type="application/merge-patch+json")

    def _script(self, step: str, spec: Obj) -> None:
        """chainsaw's ``script``: bash, with kubectl against the cluster, in the test's folder."""
        kubectl = shutil.which("kubectl")
        if self.kubeconfig is None or kubectl is None:
            why = "no kubeconfig for this run" if self.kubeconfig is None else "kubectl is not installed"
            self.skipped_operations[f"{step}/script"] = f"script needs kubectl against the API server ({why})"
            return
        self.cluster.settle()
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "NAMESPACE": self.namespace}
        done = subprocess.run(
            ["bash", "-c", spec["content"]], cwd=self.test_dir, env=env, capture_output=True, text=True, timeout=120
        )
        self.cluster.settle()
        if done.returncode != 0:
            raise AssertionError(f"{step}/script: exit {done.returncode}:\n{done.stdout}{done.stderr}")
        self.notes.append(f"{step}/script: ran ({done.stdout.strip().splitlines()[-1:] or ['no output']})")

    def _delete(self, document: Obj) -> None:
        resource = self._resource(document)
        namespace = self._namespace_of(resource, document)
        with contextlib.suppress(NotFoundError):
            resource.delete(name=document["metadata"]["name"], namespace=namespace)

    def cleanup(self, timeout: float = 120.0) -> None:
        """Delete what the run created, newest first, and its namespace, and wait until they are gone (a
        namespace terminates before its name can be used again), as chainsaw cleans up after a test."""
        documents = [
            {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": namespace}}
            for api_version, kind, name, namespace in reversed(self.created)
        ] + [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}]
        for document in documents:
            self._delete(document)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            remaining = [d for d in documents if self._candidates(d)]
            if not remaining:
                return
            time.sleep(0.5)
        raise AssertionError(f"cleanup: still there after {timeout:.0f} s: {remaining[0]['metadata']}")

    def _candidates(self, document: Obj) -> list[Obj]:
        try:
            resource = self._resource(document)
        except ResourceNotFoundError:
            return []  # the kind is not served: nothing of it exists
        namespace = self._namespace_of(resource, document)
        name = (document.get("metadata") or {}).get("name")
        if isinstance(name, str) and expression_of(name) is None:
            try:
                return [resource.get(name=name, namespace=namespace).to_dict()]
            except NotFoundError:
                return []
        return [item.to_dict() for item in resource.get(namespace=namespace).items]

    def _check(self, verb: str, key: str, expected: Obj, timeout: float) -> None:
        """``assert``: until an object matches; ``error``: until none does (settling celmut each try). Each try
        waits for celmut to settle, so once it has, the answer is final: the operation's ``timeout`` bounds
        the whole wait, :data:`SETTLED_GRACE` the time after a settled try."""
        deadline = time.monotonic() + timeout
        settled_deadline: float | None = None
        while True:
            self.cluster.settle()
            found = [(obj, mismatches(expected, obj)) for obj in self._candidates(expected)]
            matching = [obj for obj, why in found if not why]
            if (verb == "assert") == bool(matching):
                return
            now = time.monotonic()
            settled_deadline = settled_deadline or now + SETTLED_GRACE
            if now >= min(deadline, settled_deadline):
                break
            time.sleep(0.1)
        if verb == "assert":
            closest = min((why for _, why in found), key=len, default=["no object of that kind found"])
            raise AssertionError(f"{key}: no {expected['kind']} matches:\n  " + "\n  ".join(closest))
        raise AssertionError(f"{key}: {len(matching)} {expected['kind']} match, none expected: {matching[0]}")

    def _ensure_namespace(self) -> None:
        namespaces = self.cluster.client.resources.get(api_version="v1", kind="Namespace")
        try:
            namespaces.get(name=self.namespace)
        except NotFoundError:
            namespaces.create(body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})


def _api_message(ex: ApiException) -> str:
    """The error chainsaw's client reports for a refused request: the Status message of the answer."""
    try:
        return str(json.loads(ex.body or "{}").get("message") or ex.reason)
    except ValueError:
        return str(ex.reason)


def _seconds(value: object) -> float | None:
    """A Go duration as chainsaw files write them (``60s``, ``2m``)."""
    if value is None:
        return None
    text = str(value)
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    for unit in ("ms", "s", "m", "h"):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * units[unit]
    raise ValueError(f"duration {text!r}")
