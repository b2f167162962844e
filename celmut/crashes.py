"""A background thread that dies of an exception takes the process down, loudly.

celmut's long-running surfaces (``serve``, ``controller``) keep their state current from daemon
threads: watches, the policy reload, the TLS manager, report and Event writers, leader election, the
controller's status server. Python lets such a thread end with an uncaught exception and carries on
(``threading.excepthook`` prints it to stderr), which left a controller running, healthy and ready,
that never wrote the webhook's serving Secret (issue 38: a logging call in the TLS thread raised).

:func:`install` replaces that hook, process-wide: a thread that ends with an exception (or with
``SystemExit`` and a non-zero code, as uvicorn does when it cannot bind) is logged with its
traceback, :meth:`ThreadDeaths.failure` names it from then on — ``/readyz`` and ``/healthz`` answer
503 with it — and ``on_death`` is called, with which the surfaces stop and exit with code 70, so that
kubelet restarts the container as it would after a crash of the main thread. Threads that return
normally (a watch told to stop) are not deaths; work a thread catches and logs itself is not either.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("celmut.crashes")

EXIT_CODE = 70  # the CLI's "a bug in celmut": a background thread is not meant to die


class ThreadDeaths:
    """The deaths of this process's background threads, as :func:`install` records them."""

    def __init__(self, on_death: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._first = ""
        self.on_death = on_death  # set later where what it stops is built after the hook

    def failure(self) -> str:
        """Which thread died first and of what (empty while none has)."""
        with self._lock:
            return self._first

    def hook(self, args: threading.ExceptHookArgs) -> None:
        """``threading.excepthook``: record and log the death, then call ``on_death``."""
        if isinstance(args.exc_value, SystemExit) and args.exc_value.code in (None, 0):
            return  # sys.exit(0) in a thread ends it as asked
        name = args.thread.name if args.thread is not None else "unknown"
        reason = f"background thread {name} died: {args.exc_type.__name__}: {args.exc_value}"
        with self._lock:
            if not self._first:
                self._first = reason
        log.critical(
            "a background thread died; the process stops so that it is restarted",
            exc_info=args.exc_value or True,
            extra={"deadThread": name},
        )
        if self.on_death is not None:
            self.on_death()


def install(on_death: Callable[[], None] | None = None) -> ThreadDeaths:
    """Make every background thread's death fatal (see the module docstring); the record of them."""
    deaths = ThreadDeaths(on_death)
    threading.excepthook = deaths.hook
    return deaths
