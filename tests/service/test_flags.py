"""The --cel-engine flag names the engines without importing the CEL layer; the names must be the
CEL layer's own."""

from __future__ import annotations

from celmut.cel.backends import select
from celmut.service import flags


def test_the_flag_offers_exactly_the_engines_the_cel_layer_knows() -> None:
    assert flags.CHOICES == select.CHOICES and flags.ENV_VAR == select.ENV_VAR
