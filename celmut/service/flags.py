"""Flags several surfaces share.

``--cel-engine auto|celpy|cpp``: the CEL engine of the commands that compile CEL (eval, apply,
test, compile, serve, controller). Without the flag, ``CELMUT_CEL_ENGINE`` decides, and then
``auto``: the engine measured faster for policy workloads (cel-python today; see
:mod:`celmut.cel.backends.select`). The one-shot commands pass the engine to the compiler; the
long-running ones (serve, controller) make it their process's default, which their worker
processes inherit.

Adding the flag to a parser does not import the CEL layer (``celmut --version`` and ``--help`` never
load it): the names below are :mod:`celmut.cel.backends.select`'s (``tests/service`` checks they agree).

``--policy-selector`` (serve, controller): which cluster MutatingPolicies are celmut's
(:mod:`celmut.policy.selection`); a bad selector is refused by argparse (exit 2, naming it).
"""

from __future__ import annotations

import argparse
import os
import sys

from celmut.policy.selection import AUTO, OWNED_BY_CELMUT, PolicySelection, PolicySelectorError

EXIT_BAD_INPUT = 2
CHOICES = ("auto", "celpy", "cpp")  # select.CHOICES
ENV_VAR = "CELMUT_CEL_ENGINE"  # select.ENV_VAR


def add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cel-engine",
        choices=CHOICES,
        default=None,
        help=f"CEL engine: auto (the faster for policies: cel-python), celpy or cpp (needs celmut[fast]) "
        f"(default: ${ENV_VAR}, else auto)",
    )


def chosen(args: argparse.Namespace) -> str | None:
    """The concrete engine name, or None (after printing why) when it cannot be used."""
    from celmut.cel.backends import select

    try:
        return select.resolve(getattr(args, "cel_engine", None))
    except select.BackendUnavailable as ex:
        print(f"error: {ex}", file=sys.stderr)
        return None


def use_for_process(args: argparse.Namespace) -> bool:
    """Make the chosen engine this process's default (``CELMUT_CEL_ENGINE``); False (after printing
    why) when it cannot be used."""
    engine = chosen(args)
    if engine is None:
        return False
    if getattr(args, "cel_engine", None) is not None:
        os.environ[ENV_VAR] = engine
    return True


def policy_selector(text: str) -> str:
    """argparse type of ``--policy-selector``: the text, once known to be ``auto`` or a label selector."""
    try:
        PolicySelection(text)
    except PolicySelectorError as ex:
        raise argparse.ArgumentTypeError(str(ex)) from None
    return text


def add_policy_selector(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy-selector",
        type=policy_selector,
        default=AUTO,
        metavar="SELECTOR",
        help=f"the cluster MutatingPolicies celmut serves, a label selector as for kubectl get -l "
        f"(e.g. {OWNED_BY_CELMUT}; '' for all); default {AUTO}: all of them, or once Kyverno is detected "
        f"(its policy CRDs or webhooks) only those labelled {OWNED_BY_CELMUT}",
    )
