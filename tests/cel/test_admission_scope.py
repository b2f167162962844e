"""celmut.cel.lookups.AdmissionScope: the locks an admission's lookups take are held until it ends; only
the first is waited for (the deadline bounds the wait), so two admissions never wait for each other."""

from __future__ import annotations

import threading
import time

from celmut.cel.lookups import AdmissionScope, admission_scope


def test_locks_are_held_until_the_admission_ends_and_taken_once() -> None:
    lock = threading.Lock()
    assert admission_scope() is None
    with AdmissionScope(time.monotonic() + 5) as scope:
        assert admission_scope() is scope
        assert scope.acquire(lock) and scope.acquire(lock)  # held already: not taken twice
        assert lock.locked()
    assert not lock.locked() and admission_scope() is None


def test_the_first_lock_is_waited_for_until_the_deadline() -> None:
    lock = threading.Lock()
    lock.acquire()
    with AdmissionScope(time.monotonic()) as scope:  # due: no waiting
        assert not scope.acquire(lock)
    threading.Timer(0.05, lock.release).start()
    with AdmissionScope(time.monotonic() + 30) as scope:
        assert scope.acquire(lock)  # released by the other holder: taken


def test_holding_one_lock_an_admission_never_waits_for_another() -> None:
    """Admission 1 holds A and wants B; admission 2 holds B and wants A: neither waits (no deadlock)."""
    first, second = threading.Lock(), threading.Lock()
    second.acquire()  # held by another admission
    with AdmissionScope(time.monotonic() + 30) as scope:
        assert scope.acquire(first)
        assert not scope.acquire(second)  # not free: not waited for, although the deadline is far
    second.release()
