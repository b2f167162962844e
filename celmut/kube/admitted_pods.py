"""The pods this webhook process has admitted, until it can see them stored (the overlay).

Decisions counting a workload's pods (exact spot splits, distribution groups) must count the pods the
process admitted moments ago: the API server stores a pod after the admission chain, and the watched
cache shows it only once the watch delivers it. :class:`AdmittedPods` keeps each admitted pod (an
:class:`Entry`) until then, or ``seconds`` at most.

**Each pod is counted once.** A pod passes through every webhook that matches it (the chart registers
``/mutate/fail`` and ``/mutate/ignore``), each a separate call with its own request uid and no pod name
yet (the API server names a ``generateName`` pod after admission): a call that changed nothing is not
recorded (the call that changes the pod is), and a call that received a copy this process recorded (the
previous webhook's output) replaces it. Admitted pods have no name, so an entry is matched to a stored
pod by owner and recorded decision (:func:`owner_key`): pods with the same key are interchangeable for
counting.

**Read-your-writes** (issue 38, :mod:`celmut.kube.stored_pods`): an admission that counts pods reads
the cache and the entries at one moment (:meth:`snapshot`, under the cache's lock), then the pods the
API server has stored, and :func:`reconcile` counts:

* the cached pods in their stored version (a ``deletionTimestamp`` the watch has not delivered shows;
  a pod no longer stored is gone). A cached pod the list does not show is counted only when the cache
  got it after the list started *and* its resourceVersion is newer than the list's: the watch, behind,
  may deliver the creation of a pod that was deleted before the list was read;
* every stored pod the cache does not hold yet, once. An entry of the same key admitted before the list
  was answered *claims* such a pod (it is this process's pod, or interchangeable with it): from then on the
  entry stands for that pod — it is dropped when the pod is no longer stored, and when the cache
  stores that pod. With several webhook processes the pod may be another process's, and this
  process's own then goes uncounted until it is stored (the cross-process bound in docs/presets/spot.md);
* the entries that claim nothing: in flight, not stored yet — unless admitted more than
  :data:`IN_FLIGHT_SECONDS` before the list started: then the pod was refused after this webhook, or
  stored and deleted before the list (a pod this process admitted and that was deleted before a list
  or its watch showed it stored counts that long, or until the watch delivers it: milliseconds).

Without a stored list (outside an admission, or the API server cannot be read) the cache and the
entries are counted, and an entry is dropped when the cache stores a pod of its key (for a decision
another process made, an undecided copy of the same owner).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
OVERLAY_KEYS = ("celmut.io/placement", "celmut.io/distribution-group")
#: How long after its admission a pod may still be on its way to storage (the rest of the admission chain):
#: an admitted pod a list that started later does not show was stored and deleted already, or refused.
IN_FLIGHT_SECONDS = 2.0


def owner_key(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """(namespace, controller kind, controller name, recorded placement, recorded group)."""
    meta = obj.get("metadata") or {}
    owners = [r for r in meta.get("ownerReferences") or [] if r.get("controller")]
    owner = owners[0] if owners else {}
    annotations = meta.get("annotations") or {}
    return (
        str(meta.get("namespace") or ""),
        str(owner.get("kind", "")),
        str(owner.get("name", "")),
        *(str(annotations.get(k, "")) for k in OVERLAY_KEYS),
    )


def _name(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


@dataclass(eq=False)
class Entry:
    """One admitted pod: counted until the cache stores it, or it expires."""

    expires: float
    key: tuple[str, ...]
    pod: Obj
    claimed: tuple[str, str] | None = None  # the stored pod (namespace, name) it stands for
    admitted: float = 0.0  # time.perf_counter() when it was admitted
    claimed_from: float = 0.0  # when the list that showed the claimed pod was answered


@dataclass
class Reconciled:
    """What :func:`reconcile` counts, and what it learnt about the entries."""

    answered: float | None = None  # when the stored list was answered (a claim's pod was stored by then)
    pods: list[Obj] = field(default_factory=list)
    claims: dict[Entry, tuple[str, str]] = field(default_factory=dict)  # entry -> the stored pod it stands for
    gone: set[Entry] = field(default_factory=set)  # entries whose claimed pod is no longer stored


def reconcile(
    cached: list[Obj],
    entries: list[Entry],
    stored: list[Obj],
    known: frozenset[tuple[str, str]] | None = None,
    started: float | None = None,
    finished: float | None = None,
    in_flight: float = IN_FLIGHT_SECONDS,
    version: str = "",
) -> Reconciled:
    """The pods to count from ``cached`` and ``entries`` (read at one moment) and ``stored``, a list read
    after the cache held ``known`` (default: what ``cached`` holds, read just before it), requested at
    ``started`` and answered at ``finished`` (``time.perf_counter()``; the server listed in between) at
    resourceVersion ``version`` ('' when unknown). An entry admitted after ``finished`` cannot be in it:
    in flight; one admitted more than ``in_flight`` seconds before ``started`` that finds no stored pod
    is gone."""
    out = Reconciled(finished if finished is not None else started)
    by_name = {_name(pod): pod for pod in stored}
    cached_by_name = {_name(pod): pod for pod in cached}
    known = frozenset(cached_by_name) if known is None else known
    for name, pod in cached_by_name.items():
        if name in by_name:  # stored: its stored version, unless the cache has since seen it Terminating
            newer = "deletionTimestamp" in (pod.get("metadata") or {})
            out.pods.append(pod if newer else by_name[name])
        elif name not in known and not _listed_after(pod, version):
            out.pods.append(pod)  # stored after the list was read
        # else: cached when the list was read (or the watch, behind, delivered a version the list is
        # newer than), and not in it: deleted
    # stored pods the cache does not show: not delivered yet (a pod it held then dropped is gone)
    unseen = {name: pod for name, pod in by_name.items() if name not in cached_by_name and name not in known}
    represented: set[tuple[str, str]] = set()
    unclaimed: dict[tuple[str, ...], list[Entry]] = {}
    for entry in entries:
        if entry.claimed is None and finished is not None and entry.admitted >= finished:
            out.pods.append(entry.pod)  # admitted after the list was answered: in flight for it
        elif entry.claimed is None:
            unclaimed.setdefault(entry.key, []).append(entry)
        elif entry.claimed in unseen:
            represented.add(entry.claimed)
        elif started is not None and entry.claimed_from > started:
            # claimed from a list answered after this one was requested: this one may predate the pod
            out.pods.append(entry.pod)
        else:
            out.gone.add(entry)  # deleted (or stored in the cache: counted there)
    free: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    for name, pod in unseen.items():
        if name not in represented:
            free.setdefault(owner_key(pod), []).append(name)
    for key, waiting in unclaimed.items():
        waiting.sort(key=lambda e: e.admitted)  # the oldest are the likeliest stored
        for entry, name in zip(waiting, free.get(key, []), strict=False):
            out.claims[entry] = name
        for entry in waiting[len(free.get(key, [])) :]:
            if started is not None and entry.admitted < started - in_flight:
                out.gone.add(entry)  # not stored long after it was admitted: stored and deleted, or refused
            else:
                out.pods.append(entry.pod)  # in flight
    out.pods += list(unseen.values())
    return out


def _listed_after(pod: Mapping[str, Any], version: str) -> bool:
    """Whether a list at resourceVersion ``version`` was read after ``pod``'s version was stored: a pod
    the watch delivered late (stored, then deleted before the list) is not one stored after the list.

    Resource versions of one resource compare as integers (Kubernetes' own rule:
    k8s.io/apimachinery/pkg/util/resourceversion ``CompareResourceVersion``: well formed when a positive
    integer without leading zeros); False when either is not well formed (the pod then counts, as before
    the list's version was known)."""
    mine = str((pod.get("metadata") or {}).get("resourceVersion") or "")
    if not (_well_formed(mine) and _well_formed(version)):
        return False
    return (len(mine), mine) <= (len(version), version)


def _well_formed(version: str) -> bool:
    return version.isascii() and version.isdigit() and not version.startswith("0")


def _stands_for(entry: Entry, tier: int, key: tuple[str, ...], name: tuple[str, str], decided: bool) -> bool:
    """Whether a newly cached pod is ``entry``'s, in order of certainty: the pod it claimed, an unclaimed
    entry of the same owner and decision, then (another process decided the pod after this one recorded
    an earlier copy of it) an undecided entry of the same owner."""
    if tier == 0:
        return entry.claimed == name
    if entry.claimed is not None:
        return False
    if tier == 1:
        return entry.key == key
    return decided and entry.key[:3] == key[:3] and not any(entry.key[3:])


class AdmittedPods:
    """The overlay of admitted pods (see the module docstring); thread-safe."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._entries: list[Entry] = []
        self._lock = threading.Lock()

    def remember(self, pod: Obj, received: Obj | None) -> None:
        """Count ``pod``, admitted now; ``received`` is what its webhook call received (None: unknown)."""
        entry = Entry(time.monotonic() + self.seconds, owner_key(pod), pod, admitted=time.perf_counter())
        with self._lock:
            if received is not None:
                for index, recorded in enumerate(self._entries):
                    if recorded.pod == received:  # the same pod, from the previous webhook: keep one copy
                        self._entries[index] = entry
                        return
            self._entries.append(entry)

    def stored(self, event: str, pod: Obj, _old: Obj | None) -> None:
        """A pod cache handler (run under the cache's lock): drop the entry a newly cached pod was."""
        if event != "ADDED":
            return
        key, name = owner_key(pod), _name(pod)
        decided = any(key[3:])
        with self._lock:
            for tier in range(3):
                for index, entry in enumerate(self._entries):
                    if _stands_for(entry, tier, key, name, decided):
                        del self._entries[index]
                        return

    def snapshot(self, namespace: str) -> list[Entry]:
        """The live entries of a namespace (all: ""), expired ones dropped."""
        now = time.monotonic()
        with self._lock:
            self._entries = [entry for entry in self._entries if entry.expires > now]
            return [entry for entry in self._entries if not namespace or entry.key[0] == namespace]

    def settle(self, result: Reconciled) -> None:
        """Keep what a reconciliation learnt: claims, and entries whose pod is gone."""
        if not result.claims and not result.gone:
            return
        with self._lock:
            kept = []
            for entry in self._entries:
                if entry in result.gone:
                    continue
                if entry.claimed is None and entry in result.claims:
                    entry.claimed = result.claims[entry]
                    entry.claimed_from = result.answered or 0.0
                kept.append(entry)
            self._entries = kept
