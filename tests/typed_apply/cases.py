"""Every typed-apply case, by family (see tests/typed_apply/model.py for what a case is)."""

from __future__ import annotations

from tests.typed_apply.encoding_cases import ENCODING_CASES
from tests.typed_apply.key_cases import KEY_CASES
from tests.typed_apply.model import Case
from tests.typed_apply.scalar_cases import SCALAR_CASES
from tests.typed_apply.structure_cases import STRUCTURE_CASES
from tests.typed_apply.value_cases import VALUE_CASES

CASES: list[Case] = SCALAR_CASES + VALUE_CASES + ENCODING_CASES + KEY_CASES + STRUCTURE_CASES
assert len({case.id for case in CASES}) == len(CASES), "case ids are unique"
