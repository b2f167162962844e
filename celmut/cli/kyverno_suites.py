"""Run a Kyverno CLI Test the way ``kyverno test`` does, and report one row per expected result.

The evaluation: the Test's policies and exceptions are compiled once; its resources (a namespaced one
without a namespace is in ``default``) are admitted in order over a cluster made of its
``clusterResources`` (``ClusterResource`` wrappers unwrapped), ``targetResources``,
``paramResources`` and the ``context`` file's resources; ``image.GetMetadata`` and
``globalContext.Get`` read the context file and ``globalContextEntries`` mocks
(:mod:`celmut.service.kyverno_files`); then mutateExisting policies scan the targets.

The rows follow ``cmd/cli/kubectl-kyverno/commands/test/output.go`` ``printTestResult`` and
``command.go`` ``checkResult``:

* a result's ``resources`` (``name`` or ``namespace/name``; the kind is not used) select the admitted
  resources and mutateExisting targets; when none is found, every resource is checked;
* per resource, the policy's outcome: not matched → ``Pass`` ``Excluded`` (counted as a skip, whatever
  the expected result); otherwise ``pass`` (it applied or changed nothing), ``skip`` (a matchCondition
  was false, an exception applied) or ``error``, compared with the expected ``result`` after the
  resource is compared with its ``patchedResources`` document (:mod:`celmut.cli.suite_compare`):
  ``Resource diff``, ``Want X, got Y`` or ``Ok``;
* a ``patchedResources`` file with no document for the resource: the result is dropped, as Kyverno
  drops it (celmut says so in a note; ``failOnMissingResources: true`` fails it instead); a file that
  cannot be read is a ``Resource error`` row and makes the run exit 2;
* nothing found at all: ``Fail`` ``Not found``;
* results for policy kinds celmut does not run (ValidatingPolicy, ImageValidatingPolicy, a classic
  ClusterPolicy …) are not evaluated: rows of their own, listed at the end.

Where a suite only passes through one of Kyverno's leniencies (an Excluded row expected to pass, a
dropped result, a policy or resource name found nowhere), the run passes as ``kyverno test`` does and
a note says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celmut import kinds
from celmut.cel.lookups import Authorizer
from celmut.cli import suite_compare, suite_json
from celmut.cli.suite_rows import DIFF_MESSAGE, FAIL, NOT_EVALUATED, NOT_MATCHED, PASS, Row, TestRun, resource_name
from celmut.cli.suite_spec import CaseSelector, ExpectedResult, Suite, load_suite
from celmut.compile.pipeline import read_paths
from celmut.errors import CelmutError
from celmut.jsonutil import json_equal
from celmut.policy.unsupported import KYVERNO_CLASSIC_GROUP, OTHER_ENGINES
from celmut.runtime.mutate_existing import TargetResult
from celmut.runtime.results import PolicyOutcome
from celmut.service import kyverno_files
from celmut.service.assembly import is_crd
from celmut.service.offline import OfflineCluster, ResourceRun
from celmut.service.offline_context import ContextFileEntry, GlobalEntry, StaticGlobalContext, StaticImages
from celmut.sources.documents import Document, DocumentError, kubernetes_objects, load_documents
from celmut.sources.kyverno_values import Values, load_values, parse_values


@dataclass
class _Subject:
    """A resource a result can name: an admitted input, or a mutateExisting target."""

    obj: dict[str, Any]
    run: ResourceRun | None = None
    targets: list[TargetResult] = field(default_factory=list)

    @property
    def display(self) -> str:
        return resource_name(self.obj)


def _plural(count: int, word: str, plural: str) -> str:
    return f"{count} {word if count == 1 else plural}"


def _other_engine_kind(document: Document) -> str:
    """The kind of a policy another engine runs (ValidatingPolicy, classic ClusterPolicy …), or ""."""
    doc = document.content
    if not isinstance(doc, dict):
        return ""
    group = str(doc.get("apiVersion") or "").rpartition("/")[0]
    kind = str(doc.get("kind") or "")
    if kind in OTHER_ENGINES.get(group, ()) or (group == KYVERNO_CLASSIC_GROUP and kind in ("ClusterPolicy", "Policy")):
        return kind
    return ""


class _SuiteRunner:
    def __init__(
        self, suite: Suite, backend: str | None, selector: CaseSelector, authorizer: Authorizer | None = None
    ) -> None:
        self.suite = suite
        self.backend = backend
        self.authorizer = authorizer
        self.selector = selector
        self.run = TestRun(suite.path, suite.name, warnings=list(suite.warnings))
        self.patched_cache: dict[str, list[dict[str, Any]] | str] = {}
        self.other_policies: dict[str, str] = {}  # name → kind, for policies another engine runs
        self.celmut_policies: set[str] = set()
        self.subjects: list[_Subject] = []
        self.payloads: dict[str, suite_json.PayloadRun] = {}
        self.policy_documents: list[Document] = []
        self.target_identities: set[tuple[str, str, str, str]] = set()
        self.next_id = 1

    def path(self, name: str) -> Path:
        return self.suite.base / name

    def paths(self, names: Sequence[str]) -> list[Path]:
        return [self.path(n) for n in names]

    # --- loading ------------------------------------------------------------------------------------

    def execute(self) -> TestRun:
        suite, run = self.suite, self.run
        run.progress.append(f"Loading test {suite.name} ( {suite.path} ) ...")
        try:
            offline, resources = self.load()
        except CelmutError as ex:  # a file it names is missing or of the wrong shape, a bad mock or entry
            run.error = str(ex)
            return run
        if offline.compilation.errors:
            run.error = "; ".join(str(e) for e in offline.compilation.errors)
            return run
        run.warnings += offline.compilation.compiled.warnings
        compiled = offline.compilation.compiled
        self.celmut_policies = {p.name for p in compiled.policies}
        count = len({(p.kind, p.namespace, p.name) for p in compiled.policies}) + len(self.other_policies)
        excepting = _plural(len(compiled.exceptions), "exception", "exceptions")
        exceptions = f" with {excepting}" if compiled.exceptions else ""
        run.progress.append(
            f"  Applying {_plural(count, 'policy', 'policies')} to "
            f"{_plural(len(resources), 'resource', 'resources')}{exceptions} ..."
        )
        runs = offline.admit(resources)
        if suite.json_payloads:
            run.progress.append("  Loading JSON payloads ...")
            ordered = suite_json.in_file_order(compiled.policies, self.policy_documents)
            try:
                self.payloads = suite_json.run_payloads(
                    suite.json_payloads,
                    suite.base,
                    ordered,
                    compiled.exceptions,
                    kubernetes_mode=suite.legacy_json_payload,
                )
            except DocumentError as ex:
                run.error = f"failed to load JSON payload: {ex}"
                return run
        # kyverno test reports mutateExisting targets only for the Test's targetResources
        # (processor/policy_processor.go evaluates p.TargetResources): a policy whose target is its
        # own trigger (no targetMatchConstraints) adds no row beside the trigger's.
        targets = [t for t in [t for r in runs for t in r.targets] + offline.scan() if self.is_declared_target(t)]
        self.subjects = [_Subject(r.resource, run=r) for r in runs]
        by_identity: dict[tuple[str, str, str, str], _Subject] = {}
        for target in targets:
            identity = suite_compare.identity(target.target)
            if identity not in by_identity:
                by_identity[identity] = _Subject(target.target)
                self.subjects.append(by_identity[identity])
            by_identity[identity].targets.append(target)
        run.progress.append("  Checking results ...")
        for expected in suite.results:
            if self.selector.selects(expected):
                self.check(expected)
        return run

    def load(self) -> tuple[OfflineCluster, list[dict[str, Any]]]:
        suite, run = self.suite, self.run
        values = self._load_values()
        user_info = self._load_user_info()
        documents, policies = self._load_policies()
        run.progress.append("  Loading resources ...")
        given = load_documents(*self.paths(suite.cluster_resources))
        cluster = kyverno_files.unwrap_cluster_resources(given, suite.base)
        if suite.cluster_resources:
            run.progress.append("Loading Kubernetes resources ...")
        targets = load_documents(*self.paths(suite.target_resources))
        cluster += load_documents(*self.paths(suite.param_resources))
        images, entries = self._load_context(cluster)
        kubernetes_objects(cluster)
        crds = [d.content for d in [*cluster, *documents] if is_crd(d.content)]
        table = kinds.KindTable(crds)
        self._add_targets(targets, cluster, table)
        inputs = kubernetes_objects(load_documents(*self.paths(suite.resources)))
        resources = [kyverno_files.default_namespace(obj, table) for obj in inputs]
        if suite.exceptions:
            run.progress.append("  Loading exceptions ...")
        offline = OfflineCluster.build(
            policies,
            cluster,
            values,
            self.backend,
            images=images,
            global_context=entries,
            user_info=user_info,
            authorizer=self.authorizer,
        )
        return offline, resources

    def _load_values(self) -> Values:
        """The suite's ``variables`` file, overridden by its inline ``values``."""
        suite = self.suite
        values = Values()
        if suite.variables or suite.values:
            self.run.progress.append("  Loading values/variables ...")
            if suite.variables:
                values = load_values(self.path(suite.variables))
            if suite.values:
                values = parse_values(suite.values, f"{suite.path}: values", inline=True)
        return values

    def _load_user_info(self) -> dict[str, Any]:
        """The suite's ``userinfo`` file, or no user info."""
        if not self.suite.userinfo:
            return {}
        self.run.progress.append("  Loading user infos ...")
        return kyverno_files.load_user_info(self.path(self.suite.userinfo))

    def _load_policies(self) -> tuple[list[Document], list[Document]]:
        """Every policy and exception document read, and the ones this engine runs (other engines'
        policies set aside in ``other_policies``) with a binding for each unbound admission policy."""
        suite, run = self.suite, self.run
        run.progress.append("  Loading policies ...")
        documents, read_errors = read_paths(*map(str, self.paths(suite.policies + suite.exceptions)))
        if read_errors:
            raise DocumentError(str(suite.path), "; ".join(str(e) for e in read_errors))
        policies = []
        for document in documents:
            other = _other_engine_kind(document)
            if other:
                self.other_policies[str((document.content.get("metadata") or {}).get("name") or "")] = other
            else:
                policies.append(document)
        self.policy_documents = policies
        policies, unbound = kyverno_files.bind_unbound_admission_policies(policies)
        run.notes += unbound
        return documents, policies

    def _load_context(self, cluster: list[Document]) -> tuple[StaticImages, StaticGlobalContext]:
        """The suite's ``context`` file (its resources appended to ``cluster``) and global context
        mocks: the images and global context entries."""
        suite = self.suite
        images, entries = StaticImages(), StaticGlobalContext()
        if suite.context:
            context = kyverno_files.load_context(self.path(suite.context))
            cluster += [Document(f"{suite.context} spec.resources", i, o) for i, o in enumerate(context.resources)]
            images = StaticImages(context.images)
            for name, projections in context.global_context.items():
                entries.entries[name] = ContextFileEntry(name, projections)
            self.run.warnings += context.warnings
        mocks: dict[str, GlobalEntry] = {
            m.name: m for m in kyverno_files.mock_entries(suite.global_context_entries, str(suite.path), suite.base)
        }
        entries.entries.update(mocks)
        return images, entries

    def _add_targets(self, targets: list[Document], cluster: list[Document], table: kinds.KindTable) -> None:
        """Append the target resources to ``cluster``, remembering their identities.

        Targets are read like resources (defaulted), the rest of the cluster as given (Kyverno reads
        clusterResources and context resources without YamlToUnstructured)."""
        for document, obj in zip(targets, kubernetes_objects(targets), strict=True):
            target = kyverno_files.default_namespace(obj, table)
            self.target_identities.add(suite_compare.identity(target))
            cluster.append(Document(document.path, document.index, target))

    def is_declared_target(self, target: TargetResult) -> bool:
        return suite_compare.identity(target.target) in self.target_identities

    # --- results ------------------------------------------------------------------------------------

    def row(self, expected: ExpectedResult, resource: str, result: str, reason: str, **extra: Any) -> Row:
        row = Row(self.next_id, expected.policy, expected.rule, resource, result, reason, **extra)
        if result == PASS:
            row.counted = "skip" if expected.result == "skip" or reason == "Excluded" else "pass"
        elif result == FAIL:
            row.counted = "fail"
        else:
            row.counted = "other"
        if result != NOT_EVALUATED:
            self.next_id += 1
        return row

    def note(self, expected: ExpectedResult, text: str) -> None:
        self.run.notes.append(f"results[{expected.index}] (policy {expected.policy}): {text}")

    def check(self, expected: ExpectedResult) -> None:
        refs = self.selector.resources(expected)
        other_kind = expected.other_kind or (
            self.other_policies.get(expected.policy_name, "")
            if expected.policy_name not in self.celmut_policies
            else ""
        )
        if other_kind:
            for ref in refs or ("",):
                self.run.not_evaluated.append(
                    self.row(expected, ref, NOT_EVALUATED, f"{other_kind}: celmut runs mutating policies only")
                )
            return
        if self.payloads and any(ref in self.payloads for ref in refs):
            self.payload_rows(expected, refs)
            return
        if self.payloads and not refs and not expected.resource_specs:
            # output.go: "The test specifies no resources, check all results" (JSON documents included)
            self.payload_rows(expected, list(self.payloads))
            if not self.subjects:
                return
        if expected.policy_name not in self.celmut_policies:
            self.note(
                expected,
                "no such policy among this test's policies; kyverno test reports each resource it names as "
                "Excluded, a pass",
            )
        chosen = [s for s in self.subjects if any(_names(s.obj, r) for r in refs)]
        specs = expected.resource_specs
        chosen += [s for s in self.subjects if s not in chosen and any(_specified(s.obj, spec) for spec in specs)]
        if not chosen:
            if refs or expected.resource_specs:
                self.note(
                    expected,
                    f"none of its resources ({', '.join(refs) or 'resourceSpecs'}) is among the test's resources or "
                    "targets; as kyverno test does, every resource is checked",
                )
            chosen = list(self.subjects)
        for subject in chosen:
            rows, dropped = self.subject_rows(expected, subject)
            if not rows and not dropped:
                rows = [self.row(expected, subject.display, FAIL, "Not found", message="Not found")]
            self.run.rows += rows

    def payload_rows(self, expected: ExpectedResult, refs: Sequence[str]) -> None:
        """Rows for a result naming JSON documents by their declared paths (:mod:`celmut.cli.suite_json`)."""
        for ref in refs:
            payload = self.payloads.get(ref)
            outcome = payload.outcome(expected.policy_name) if payload is not None else None
            if payload is None or outcome is None:
                self.run.rows.append(self.row(expected, ref, FAIL, "Not found", message="Not found"))
                continue
            status, message = suite_json.status(outcome), outcome.reason
            if expected.patched:
                available, actual = payload.snapshot(outcome)
                try:
                    wanted = suite_json.load_document(self.path(expected.patched))
                except DocumentError as ex:
                    self.run.file_errors.append(f"{self.suite.path}: patchedResources: {ex}")
                    self.run.rows.append(self.row(expected, ref, FAIL, "Resource error", message=str(ex)))
                    continue
                if not available:
                    why = (
                        "no successfully patched JSON document is available; omit patchedResources for an error result"
                    )
                    self.run.rows.append(self.row(expected, ref, FAIL, "Resource error", message=why))
                    continue
                if not json_equal(wanted, actual):
                    self.run.rows.append(
                        self.row(
                            expected, ref, FAIL, "Resource diff", message=DIFF_MESSAGE,
                            json_docs=(wanted, actual), patched_file=expected.patched,
                        )
                    )  # fmt: skip
                    continue
            if status != expected.result:
                self.run.rows.append(
                    self.row(expected, ref, FAIL, f"Want {expected.result}, got {status}", message=message)
                )
            else:
                self.run.rows.append(self.row(expected, ref, PASS, "Ok", message=message))

    def subject_rows(self, expected: ExpectedResult, subject: _Subject) -> tuple[list[Row], bool]:
        rows: list[Row] = []
        dropped = False
        if subject.run is not None:
            run = subject.run
            outcomes = [o for o in run.result.outcomes if _policy_name(o.policy) == expected.policy_name]
            evaluated = [o for o in outcomes if not (o.status == "skipped" and o.cause in NOT_MATCHED)]
            if not evaluated:
                why = next((o.reason for o in outcomes if o.reason), "the policy does not match this resource")
                rows.append(self.row(expected, subject.display, PASS, "Excluded", message=f"Excluded: {why}"))
                if expected.result != "skip":
                    self.note(
                        expected,
                        f"{subject.display} is Excluded ({why}); kyverno test reports that as a pass whatever the "
                        f"expected result ({expected.result})",
                    )
            else:
                status, message = _status(evaluated)
                actual = run.result.object if run.result.object is not None else run.resource
                row = self.compare(expected, subject, status, message, actual)
                dropped = row is None
                rows += [row] if row is not None else []
        for target in subject.targets:
            if _policy_name(target.policy) != expected.policy_name:
                continue
            status, message = _status([target.outcome])
            actual = target.mutated if target.mutated is not None else target.target
            row = self.compare(expected, subject, status, message, actual)
            if row is None:
                dropped = True
                continue
            if row.failed and expected.result == "fail":  # output.go: success := ok || result == fail
                row.result, row.counted = PASS, "pass"
                self.note(
                    expected,
                    f"target {subject.display}: kyverno test counts a failed check as a pass when the expected "
                    "result is fail",
                )
            rows.append(row)
        return rows, dropped

    def compare(
        self, expected: ExpectedResult, subject: _Subject, status: str, message: str, actual: dict[str, Any]
    ) -> Row | None:
        """The row for one outcome (checkResult), or None when Kyverno drops it."""
        display = subject.display
        if expected.patched:
            documents = self.patched(expected.patched)
            if isinstance(documents, str):
                return self.row(expected, display, FAIL, "Resource error", message=documents)
            wanted = suite_compare.find_expected(documents, actual)
            if wanted is None:
                missing = f"{expected.patched} has no document for {display}"
                if expected.fail_on_missing:
                    message = f"{missing} (failOnMissingResources)"
                    return self.row(expected, display, FAIL, "Resource error", message=message)
                self.note(
                    expected,
                    f"{missing}: kyverno test drops this result (failOnMissingResources: true fails it instead)",
                )
                return None
            if not suite_compare.matches(wanted, actual):
                return self.row(
                    expected,
                    display,
                    FAIL,
                    "Resource diff",
                    message=DIFF_MESSAGE,
                    expected_doc=wanted,
                    actual_doc=actual,
                    patched_file=expected.patched,
                    policy_error=message if status == "error" else "",
                )
        if status != expected.result:
            return self.row(expected, display, FAIL, f"Want {expected.result}, got {status}", message=message)
        return self.row(expected, display, PASS, "Ok", message=message)

    def patched(self, name: str) -> list[dict[str, Any]] | str:
        """The documents of a patchedResources file, read on first need; an error text when unreadable."""
        if name not in self.patched_cache:
            try:
                self.patched_cache[name] = kubernetes_objects(load_documents(self.path(name)))
            except DocumentError as ex:
                self.patched_cache[name] = f"Error: failed to load resource ({ex})"
                self.run.file_errors.append(f"{self.suite.path}: patchedResources: {ex}")
        return self.patched_cache[name]


def _policy_name(display: str) -> str:
    """A policy outcome's name, without its namespace and autogen suffix (``ns/p (autogen defaults)`` → p)."""
    return display.partition(" (autogen")[0].rpartition("/")[2]


def _names(obj: dict[str, Any], ref: str) -> bool:
    """Whether ``ref`` (``name`` or ``namespace/name``) names ``obj``; an object without a namespace
    is in ``default``, as Kyverno reads every resource."""
    namespace, _, name = ref.rpartition("/")
    meta = obj.get("metadata") or {}
    return meta.get("name") == name and (not namespace or namespace == (meta.get("namespace") or "default"))


def _specified(obj: dict[str, Any], spec: dict[str, str]) -> bool:
    """``resourceSpecs``: group/version, namespace and name (output.go)."""
    group, version = spec.get("group", ""), spec.get("version", "")
    api_version = f"{group}/{version}" if group else version
    meta = obj.get("metadata") or {}
    return (
        obj.get("apiVersion") == api_version
        and spec.get("namespace", "") == (meta.get("namespace") or "default")
        and meta.get("name") == spec.get("name")
    )


def _status(outcomes: Sequence[PolicyOutcome]) -> tuple[str, str]:
    """Kyverno's result for a MutatingPolicy's rule response: error, pass (applied or changed nothing)
    or skip (a matchCondition was false, an exception applied), with its message. A
    MutatingAdmissionPolicy that changed nothing is a skip, "mutation had no effect"
    (pkg/admissionpolicy/mutate.go ``mutateResource``)."""
    if outcomes and all(o.kind == "MutatingAdmissionPolicy" and o.status == "unchanged" for o in outcomes):
        return "skip", "mutation had no effect"
    for wanted, statuses in (("error", ("error",)), ("pass", ("applied", "unchanged"))):
        found = [o for o in outcomes if o.status in statuses or (wanted == "error" and o.cause == "error")]
        if found:
            return wanted, found[0].reason or ("success" if wanted == "pass" else "")
    return "skip", "; ".join(o.reason for o in outcomes if o.reason) or "skip"


def run_test_file(
    path: Path, backend: str | None = None, selector: CaseSelector | None = None, authorizer: Authorizer | None = None
) -> TestRun:
    """Run one Test file; a file of the wrong shape gives a run with ``error`` set. ``authorizer``
    answers the CEL authorizer's checks (``--authorizer``)."""
    try:
        suite = load_suite(path)
    except DocumentError as ex:
        return TestRun(path, path.name, error=str(ex))
    return _SuiteRunner(suite, backend, selector or CaseSelector(), authorizer).execute()
