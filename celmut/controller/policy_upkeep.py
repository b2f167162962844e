"""The controller's policies in service: reloaded from their sources, and what the leader keeps for
them in the cluster (Kyverno's PolicyExceptions, the generated MutatingAdmissionPolicies)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from celmut import cel
from celmut.cel.lookups import ResourceLookup
from celmut.controller import restart_policy
from celmut.controller.generator import AdmissionPolicyGenerator
from celmut.controller.policy_validation import PolicyValidationConfig, PolicyValidationWriter
from celmut.controller.reconcile import LoadedPolicies
from celmut.controller.status import ControllerMetrics
from celmut.controller.triggers import drift_policies, policy_fingerprint
from celmut.controller.webhook_rules import WebhookRulesConfig, WebhookRulesWriter
from celmut.kube.authorization import SubjectAccessReviewAuthorizer
from celmut.kube.client import Cluster
from celmut.kube.kyverno_exceptions import KyvernoExceptions
from celmut.kube.policy_source import ClusterPolicySource
from celmut.runtime.ownership import OptOut
from celmut.service.assembly import narrowed
from celmut.service.settings import ServiceSettings
from celmut.service.store import PolicySource, PolicyStore
from celmut.sources.files import FileSource


class UpkeepConfig(Protocol):
    """What :class:`PolicyUpkeep` reads of the controller's configuration (``ControllerConfig``)."""

    @property
    def service(self) -> ServiceSettings: ...
    @property
    def dry_run(self) -> bool: ...
    @property
    def kyverno_exceptions_namespace(self) -> str: ...
    @property
    def allow_immediate_restart(self) -> bool: ...
    @property
    def webhook_rules(self) -> WebhookRulesConfig | None: ...
    @property
    def policy_validation(self) -> PolicyValidationConfig | None: ...
    @property
    def evictions_per_minute(self) -> float: ...


class PolicyUpkeep:
    """Loads the policies (files and, with ``--from-cluster``, the cluster's) into a
    :class:`LoadedPolicies`, and, on the leader, keeps what celmut writes for them."""

    def __init__(
        self,
        config: UpkeepConfig,
        cluster: Cluster,
        resources: ResourceLookup,
        opt_out: OptOut,
        metrics: ControllerMetrics,
        global_context: cel.GlobalContextLookup | None = None,
        images: cel.ImageMetadataLookup | None = None,
    ) -> None:
        service = config.service
        self.policy_source = (
            ClusterPolicySource(
                cluster, admission_policies=service.serve_admission_policies, selection=service.policy_selection
            )
            if service.from_cluster
            else None
        )
        sources: list[PolicySource] = [FileSource(list(service.policy_paths))] if service.policy_paths else []
        if self.policy_source is not None:
            sources.append(self.policy_source)
        settings = service.in_cluster(
            resources=resources,
            global_context=global_context,
            images=images,
            authorizer=SubjectAccessReviewAuthorizer(cluster),
            opt_out=opt_out,
        )
        self.store = PolicyStore(sources, settings, skip_unsupported=service.skip_unsupported)
        self.metrics = metrics
        self.loaded: LoadedPolicies | None = None
        self._fingerprints: dict[str, str] = {}
        self._restart_warned: set[str] = set()
        self._cluster = cluster
        self._config = config
        self.kyverno_exceptions = (
            KyvernoExceptions(cluster, config.kyverno_exceptions_namespace)
            if config.kyverno_exceptions_namespace and self.policy_source is not None and not config.dry_run
            else None
        )
        # spec.autogen.mutatingAdmissionPolicy: the leader keeps the generated MutatingAdmissionPolicies.
        self.generator = (
            AdmissionPolicyGenerator(
                cluster,
                opt_out_label=service.opt_out_label,
                configuration=config.webhook_rules.name if config.webhook_rules is not None else "",
            )
            if self.policy_source is not None and not config.dry_run
            else None
        )
        # webhook.managedRules: the leader keeps the MutatingWebhookConfiguration in line with the policies.
        self.webhook_rules = (
            WebhookRulesWriter(cluster, config.webhook_rules)
            if config.webhook_rules is not None and not config.dry_run
            else None
        )
        # policyValidation: the leader keeps the ValidatingWebhookConfiguration of the policy kinds (it follows
        # Kyverno's presence, which only the cluster's policy source knows).
        self.policy_validation = (
            PolicyValidationWriter(cluster, config.policy_validation)
            if config.policy_validation is not None and self.policy_source is not None and not config.dry_run
            else None
        )

    def reload(self, is_leader: Callable[[], bool], *, force: bool = False) -> list[str] | None:
        """Reload policies; the names of policies that are new or changed (they are scanned), or None
        when the engine in service did not change."""
        reloaded = self.store.reload(force=force) is not None
        retry = self.kyverno_exceptions is not None and self.kyverno_exceptions.due()
        if (reloaded or retry) and is_leader():
            self.sync_kyverno_exceptions()
        if (reloaded or (self.generator is not None and self.generator.due())) and is_leader():
            self.sync_admission_policies()
        if (reloaded or (self.webhook_rules is not None and self.webhook_rules.due())) and is_leader():
            self.sync_webhook_rules()
        if (reloaded or (self.policy_validation is not None and self.policy_validation.due())) and is_leader():
            self.sync_policy_validation()
        if reloaded and is_leader():
            self.sync_restart_conditions()
        engine = self.store.engine
        if engine is None or (self.loaded is not None and self.loaded.all is engine):
            return None
        allow_immediate = self._config.allow_immediate_restart
        drifting = drift_policies(engine.policies) if allow_immediate else []
        if not allow_immediate:
            restart_policy.warn_disabled(engine.policies, self._restart_warned)
        drift = narrowed(engine, drifting) if drifting else None
        self.loaded = LoadedPolicies(engine, drift)
        fingerprints = {p.display_name: policy_fingerprint(p) for p in engine.policies}
        changed = [name for name, fp in fingerprints.items() if self._fingerprints.get(name) != fp]
        self._fingerprints = fingerprints
        return changed

    def sync_kyverno_exceptions(self) -> None:
        """The leader keeps Kyverno's PolicyExceptions for the policies celmut serves (after each reload)."""
        source, exceptions = self.policy_source, self.kyverno_exceptions
        if source is None or exceptions is None or source.ownership is None:
            return
        api_version = source.api_version("PolicyException")
        if api_version is None:  # no PolicyException CRD: Kyverno cannot be asked
            return
        existing = source.objects_of("PolicyException")
        exceptions.sync(source.ownership, source.policies(), existing, api_version)

    def sync_webhook_rules(self) -> None:
        """The leader writes the webhook configuration the loaded policies need (never before the cluster's
        policies are all listed: an empty list then would drop every rule)."""
        engine, writer = self.store.engine, self.webhook_rules
        if engine is None or writer is None or (self.policy_source is not None and not self.policy_source.synced()):
            return
        if writer.sync(engine.policies, self.policy_source):
            self.metrics.webhook_configuration_writes.inc()

    def sync_policy_validation(self) -> None:
        """The leader writes the policy validating webhook (after each reload: Kyverno may have come or gone)."""
        writer, source = self.policy_validation, self.policy_source
        if writer is not None and source is not None and writer.sync(source):
            self.metrics.webhook_configuration_writes.inc()

    def sync_restart_conditions(self) -> None:
        """The leader states on each PodMutation asking for restartPolicy immediate whether it is acted on."""
        if self.policy_source is None or self._config.dry_run:
            return
        restart_policy.sync_conditions(
            self._cluster,
            self.policy_source.objects_of("PodMutation"),
            allowed=self._config.allow_immediate_restart,
            per_minute=self._config.evictions_per_minute,
        )

    def sync_admission_policies(self) -> None:
        """The leader keeps the MutatingAdmissionPolicies generated from policies (after each reload)."""
        if self.generator is not None and self.policy_source is not None:
            outcome = self.generator.sync(self.policy_source)
            for action, names in vars(outcome).items():
                if names:
                    self.metrics.generated.labels(action).inc(len(names))
