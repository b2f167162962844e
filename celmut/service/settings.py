"""One frozen settings object from the flags to the engine, for every long-running surface.

``celmut serve`` and ``celmut controller`` share most of their configuration: what they load
(``--policies``, ``--skip-unsupported``, ``--from-cluster``, ``--kubeconfig``, ``--serve-admission-policies``,
``--policy-selector``), what they leave alone (``--opt-out-label``), where CEL may reach (the HTTP
allow-list, the image registries) and the engine's own settings (deadline, presets' failure policy,
background users, provenance). :func:`from_flags` builds that part once from the shared flags
(:mod:`celmut.service.flags`); each surface's config (``server.run.ServeConfig``,
``controller.run.ControllerConfig``) holds it as its ``service`` field beside what only that
surface has, so no setting is copied by hand between objects.

The :class:`~celmut.runtime.options.EngineSettings` inside (``engine``) is complete but for what
only the cluster connection provides: :meth:`ServiceSettings.in_cluster` adds the cluster's lookups
and the opt-out that follows owners, and :func:`celmut.service.assembly.assemble_engine` (through a
:class:`~celmut.service.store.PolicyStore`) the schemas.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from typing import Any

from celmut import cel
from celmut.policy.selection import AUTO, PolicySelection
from celmut.runtime.options import EngineSettings
from celmut.runtime.ownership import DEFAULT_OPT_OUT_LABEL, OptOut
from celmut.service import cluster_data_flags, flags
from celmut.service.assembly import cluster_services

# The CEL deadline of a webhook admission or a controller evaluation: the webhook's own timeout (10 s,
# the API server's default for a webhook call), where the offline commands use cel's 2 s.
SURFACE_TIMEOUT_SECONDS = 10.0


def surface_engine(**settings: Any) -> EngineSettings:
    """The engine settings of a long-running surface: ``settings`` over its defaults (a 10 s deadline;
    outcomes only for the policies that may select the request, as the webhook answers and the
    controller's passes visit only candidates — runtime/candidates.py)."""
    defaults: dict[str, Any] = {"timeout_seconds": SURFACE_TIMEOUT_SECONDS, "report_unselected": False}
    return EngineSettings(**{**defaults, **settings})


@dataclass(frozen=True)
class ServiceSettings:
    """What the webhook and the controller share, from the shared flags."""

    policy_paths: tuple[str, ...] = ()  # --policies
    skip_unsupported: bool = False  # --skip-unsupported: documents of --policies celmut does not serve, skipped
    from_cluster: bool = False  # also the cluster's policies (and lookups)
    kubeconfig: str | None = None  # None: in-cluster configuration, else ~/.kube/config
    serve_admission_policies: bool = False  # cluster MAPs: an API server with the plugin applies them itself
    policy_selector: str = AUTO  # which cluster MutatingPolicies are celmut's (celmut.policy.selection)
    opt_out_label: str = DEFAULT_OPT_OUT_LABEL  # objects (or their owners) carrying it are left alone
    registry: cel.RegistryPolicy = field(default_factory=cel.RegistryPolicy)  # image.GetMetadata's registries
    engine: EngineSettings = field(default_factory=surface_engine)  # the HTTP allow-list in engine.services

    @property
    def http_policy(self) -> cel.HttpPolicy:
        """The allow-list of CEL's ``http.Get``/``http.Post`` (also the GlobalContextEntries' calls)."""
        return self.engine.services.http_policy

    @property
    def policy_selection(self) -> PolicySelection:
        return PolicySelection(self.policy_selector)

    def in_cluster(
        self,
        *,
        resources: cel.ResourceLookup | None = None,
        global_context: cel.GlobalContextLookup | None = None,
        images: cel.ImageMetadataLookup | None = None,
        authorizer: cel.Authorizer | None = None,
        opt_out: OptOut | None = None,
    ) -> EngineSettings:
        """The engine settings with what the cluster connection provides: its lookups
        (:func:`~celmut.service.assembly.cluster_services`) and the opt-out followed through owners."""
        services = cluster_services(self.engine.services, resources, global_context, images, authorizer)
        return replace(self.engine, services=services, opt_out=opt_out)


def from_flags(args: argparse.Namespace, **engine: Any) -> ServiceSettings | None:
    """The shared settings the flags of ``serve`` or ``controller`` describe, ``engine`` adding the
    surface's own engine settings (e.g. ``timeout_seconds``); None (after printing why) when the
    HTTP allow-list or the registry flags are unusable (exit 2)."""
    http_policy = flags.start_process(args)
    registry = cluster_data_flags.registry_policy(args)
    if http_policy is None or registry is None:
        return None
    return ServiceSettings(
        policy_paths=tuple(args.policies),
        skip_unsupported=args.skip_unsupported,
        from_cluster=args.from_cluster,
        kubeconfig=args.kubeconfig,
        serve_admission_policies=args.serve_admission_policies,
        policy_selector=args.policy_selector,
        opt_out_label=args.opt_out_label,
        registry=registry,
        engine=surface_engine(
            services=cel.Services(http_policy=http_policy), preset_failure_policy=args.preset_failure_policy, **engine
        ),
    )
