"""Interfaces through which CEL functions reach the outside world.

CEL evaluation itself never performs I/O: Kyverno's ``resource.*``, ``globalContext.Get``,
``image.GetMetadata`` and ``http.*`` call the providers in :class:`Services`, which the caller
(CLI, webhook, controller, tests) supplies per evaluation. With a provider missing, the function
fails with :class:`LookupUnavailable` naming what is missing.
"""

from __future__ import annotations

import contextlib
import datetime
import random
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from celmut.cel.errors import CelEvaluationError, Reschedule

_MAY_BLOCK: ContextVar[bool] = ContextVar("celmut_may_block", default=True)


def may_block() -> bool:
    """Whether a provider may wait here (False while the webhook evaluates on its event loop)."""
    return _MAY_BLOCK.get()


class _WithoutBlocking:
    """:func:`without_blocking`'s context manager (a class: entered once per admission on the event
    loop, where a generator-based one costs three times as much)."""

    __slots__ = ("token",)

    def __enter__(self) -> None:
        self.token = _MAY_BLOCK.set(False)

    def __exit__(self, *exc_info: object) -> None:
        _MAY_BLOCK.reset(self.token)


def without_blocking() -> contextlib.AbstractContextManager[None]:
    """Evaluate where nothing may wait: a provider about to wait raises :class:`Reschedule` instead."""
    return _WithoutBlocking()


def before_blocking(what: str) -> None:
    """Call before anything that may wait (the network, a cache still listing): raises
    :class:`Reschedule` where waiting is not allowed, before anything was done."""
    if not _MAY_BLOCK.get():
        raise Reschedule(what)


class Holdable(Protocol):
    """A lock an admission may hold (``threading.Lock``)."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool: ...

    def release(self) -> None: ...


_SCOPE: ContextVar[AdmissionScope | None] = ContextVar("celmut_admission_scope", default=None)


class AdmissionScope:
    """One admission, from its first lookup until the surface has recorded what it admitted: the locks
    its lookups took are held until then (issue 38: decisions that count a workload's pods are made one
    at a time per workload inside a process, each seeing the pods the earlier ones admitted).

    The webhook opens one around each admission (``with AdmissionScope(deadline):``); a provider asks
    :func:`admission_scope` for it and takes its locks with :meth:`acquire`. Outside one, nothing is held."""

    __slots__ = ("_held", "_token", "arrived", "deadline", "decision_id", "final", "stale", "stamps", "views")

    def __init__(self, deadline: float | None = None, arrived: float | None = None, decision_id: str = "") -> None:
        self.deadline = deadline  # time.monotonic() value after which no lock is waited for
        # time.perf_counter() value when the request arrived: what the API server had stored by then is
        # what its sender had seen (None: unknown)
        self.arrived = arrived
        # what the admitted object carries when its decision counted a workload's pods (the request's uid);
        # '' when the admission decides nothing a decision ledger records (not a workload pod's creation)
        self.decision_id = decision_id
        self._held: list[Holdable] = []
        # what a provider read for this evaluation that others may change (celmut.kube.decision_ledger):
        # key -> what was read; ``stale`` when it changed before the admission was recorded
        self.views: dict[Any, Any] = {}
        self.stamps: dict[str, str] = {}  # annotations the admitted object must carry (the decision's id)
        self.stale = False
        self.final = False  # the surface evaluates no more: what was decided is recorded as it is

    def evaluate_again(self) -> bool:
        """Whether what the evaluation decided on changed before it was recorded (another process
        decided meanwhile): then the surface evaluates the request again, its locks still held."""
        if not self.stale:
            return False
        self.stale = False
        self.views.clear()
        self.stamps.clear()
        return True

    def acquire(self, lock: Holdable) -> bool:
        """Hold ``lock`` until the admission ends (at once if already held); False when it was not free
        before the deadline. Only the first lock is waited for: holding one, an admission only takes
        another that is free, so two admissions never wait for each other's."""
        if any(held is lock for held in self._held):
            return True
        wait = -1.0 if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        if not lock.acquire(timeout=0.0 if self._held else wait):
            return False
        self._held.append(lock)
        return True

    def __enter__(self) -> AdmissionScope:
        self._token = _SCOPE.set(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _SCOPE.reset(self._token)
        while self._held:
            self._held.pop().release()


def admission_scope() -> AdmissionScope | None:
    """The admission being evaluated here, when a surface opened one."""
    return _SCOPE.get()


class LookupUnavailable(CelEvaluationError):
    """A CEL function needs a provider the caller did not supply."""


class LookupFailed(CelEvaluationError):
    """A provider was asked and answered with an error (not found, forbidden, timeout, …)."""


class ResourceNotFound(LookupFailed):
    """The API server's NotFound. Any provider may raise it (or any error whose ``reason`` is
    ``"NotFound"``); ``resource.Get`` then yields ``null``."""

    reason = "NotFound"


class ResourceConflict(LookupFailed):
    """The API server's AlreadyExists / BadRequest for ``resource.Post``."""

    reason = "AlreadyExists"


class ResourceLookup(Protocol):
    """Kubernetes objects for ``resource.Get/List/Post`` and namespace lookups."""

    def get(self, api_version: str, resource: str, namespace: str, name: str) -> dict[str, Any]: ...

    def list(
        self, api_version: str, resource: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]: ...

    def post(self, api_version: str, resource: str, namespace: str, data: dict[str, Any]) -> dict[str, Any]: ...

    def resource_for_kind(self, api_version: str, kind: str) -> str | None:
        """The plural resource name of a kind, for ``resource.ToGVR``; None when unknown."""
        ...


class SharedListLookup(ResourceLookup, Protocol):
    """A :class:`ResourceLookup` whose lists ``resource.List`` reads without copying each object."""

    def list_values(
        self, api_version: str, resource: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """:meth:`list`'s answer already in CEL's value form (what ``to_cel_value`` makes of it), its items
        the lookup's own objects rather than copies: nobody changes them (CEL only reads, and the lookup
        replaces an object, never edits it), so a list costs the objects it selects, not a copy of each."""
        ...


class GlobalContextLookup(Protocol):
    def get(self, entry: str, projection: str = "") -> Any: ...


class ImageMetadataLookup(Protocol):
    def get_metadata(self, reference: str) -> dict[str, Any]: ...


class HttpTransport(Protocol):
    """Performs one HTTP request after celmut's allow-list and address checks passed."""

    def request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float
    ) -> tuple[int, bytes]: ...


@dataclass(frozen=True)
class HttpPolicy:
    """Where CEL's ``http.*`` may connect. Empty allow-list: every request is denied."""

    allow: Sequence[str] = ()  # URL prefixes or glob patterns, e.g. "https://api.example.com/"
    allow_private_networks: bool = False  # loopback, RFC 1918, link-local, … (SSRF protection)
    allow_networks: Sequence[str] = ()  # CIDRs reachable even when private, e.g. the cluster's Service CIDR
    timeout_seconds: float = 5.0
    max_response_bytes: int = 1 << 20


@dataclass(frozen=True)
class UserInfo:
    """Who an authorization check is for (``k8s.io/apiserver/pkg/authentication/user.Info``)."""

    username: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class AuthorizationAttributes:
    """One authorization check (``authorizer.AttributesRecord``): a resource request (group,
    resource, subresource, namespace, name; any API version) or a non-resource ``path``."""

    user: UserInfo
    verb: str
    path: str = ""
    resource_request: bool = False
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    field_selector: str = ""
    label_selector: str = ""


@dataclass(frozen=True)
class AuthorizationDecision:
    """``allow``, ``deny`` or ``no-opinion``, with the authorizer's reason and error ('' for none)."""

    decision: str
    reason: str = ""
    error: str = ""


class Authorizer(Protocol):
    """Answers the CEL ``authorizer`` library's checks (a SubjectAccessReview in the cluster)."""

    def authorize(self, attributes: AuthorizationAttributes) -> AuthorizationDecision: ...


@dataclass(frozen=True)
class RegistryPolicy:
    """Which registries ``image.GetMetadata`` may read in the cluster. Empty allow-list: none."""

    allow: Sequence[str] = ()  # registry hosts ("ghcr.io", "registry.example.com:5000") or globs ("*.gcr.io")
    insecure: Sequence[str] = ()  # of those, the ones spoken to over plain HTTP (a local test registry)
    timeout_seconds: float = 3.0  # for one image's manifest and config: well inside the webhook's deadline
    cache_seconds: float = 300.0  # how long image data is reused
    cache_entries: int = 512  # image data kept at most (least recently used dropped first)
    max_bytes: int = 4 << 20  # per manifest or config document
    pull_secrets: bool = False  # read the pod's imagePullSecrets (needs RBAC to read Secrets)


#: The namespace and ``imagePullSecrets`` names of the object being evaluated, for a registry provider
#: (set by ``image.GetMetadata``; a static provider ignores it).
PULL_SECRETS: ContextVar[tuple[str, tuple[str, ...]] | None] = ContextVar("celmut_pull_secrets", default=None)


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass
class Services:
    """Everything impure a CEL evaluation may use; all optional."""

    resources: ResourceLookup | None = None
    global_context: GlobalContextLookup | None = None
    images: ImageMetadataLookup | None = None
    http_policy: HttpPolicy = field(default_factory=HttpPolicy)
    http_transport: HttpTransport | None = None
    authorizer: Authorizer | None = None  # the CEL authorizer library's checks (MutatingAdmissionPolicy)
    clock: Callable[[], datetime.datetime] = _utc_now
    rng: random.Random = field(default_factory=random.Random)
    namespaced_policy_namespace: str | None = None  # set for NamespacedMutatingPolicy evaluation
    dry_run: bool = False  # a dry-run request: functions with side effects (resource.Post, http.Post) refuse
    # An admission engine with no cluster (celmut.service.assembly.assemble_engine without a resource
    # lookup): resource.Get and resource.List answer null, nothing being there to find or list, so a
    # policy (celmut's placement presets) can fall back without an error. Elsewhere (``celmut eval``)
    # a missing lookup stays an error. Kyverno always has its cluster; it never answers so.
    null_without_resources: bool = False

    def refuse_side_effects(self, function: str) -> None:
        """Raise when evaluating a dry-run request: it must not change anything outside."""
        if self.dry_run:
            raise LookupFailed(f"{function}: not allowed for a dry-run request (it would have side effects)")

    def require_resources(self, function: str) -> ResourceLookup:
        if self.resources is None:
            raise LookupUnavailable(f"{function}: no cluster resource lookup is configured")
        return self.resources


NO_SERVICES = Services()
