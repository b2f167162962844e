"""What a preset compiler is: the protocol every preset implements and the helpers they share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from celmut.policy.errors import PolicyError
from celmut.sources.documents import Document


@dataclass
class PresetOutput:
    """Generated policy documents and the documents that were rejected."""

    policies: list[dict[str, Any]] = field(default_factory=list)
    errors: list[Exception] = field(default_factory=list)


class PresetCompiler(Protocol):
    name: str

    def claims(self, document: Any) -> bool:
        """Whether this compiler handles the document."""
        ...

    def compile(self, documents: Sequence[Document]) -> PresetOutput:
        """Policies for all the claimed documents; invalid ones become errors naming file and field."""
        ...


T = TypeVar("T")


def compile_each(
    documents: Sequence[Document],
    parse: Callable[[Document], T],
    identify: Callable[[Document, T], tuple[str, str]],
    build: Callable[[Document, T], dict[str, Any] | list[dict[str, Any]]],
    duplicate: Callable[[Document, T, str], PolicyError],
) -> PresetOutput:
    """Compile documents that each make one policy (or one set of them: ``build`` may return a list),
    refusing a second document for the same policy.

    ``identify`` gives (the generated policy's name, how to name this document in an error);
    ``duplicate`` builds the error for a document whose policy an earlier one (so named) generates.
    """
    output = PresetOutput()
    seen: dict[str, str] = {}
    for document in documents:
        try:
            parsed = parse(document)
        except PolicyError as ex:
            output.errors.append(ex)
            continue
        name, origin = identify(document, parsed)
        if name in seen:
            output.errors.append(duplicate(document, parsed, seen[name]))
            continue
        seen[name] = origin
        built = build(document, parsed)
        output.policies.extend(built if isinstance(built, list) else [built])
    return output


GENERATED_BY = "celmut.io/generated-from"  # annotation on every generated policy: the source document
