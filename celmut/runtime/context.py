"""Per-request state every policy of one request shares: the CEL request, the namespace, the budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from celmut import cel
from celmut.cel.activation import approximate_size
from celmut.compile.compiled import CompiledPolicy
from celmut.runtime import decode, matching, ownership
from celmut.runtime.options import AdmissionOptions
from celmut.runtime.request import AdmissionInput
from celmut.runtime.shared import SharedValues


class RequestContext:
    """Per-request state shared by all policies: CEL request, namespace labels, budget."""

    def __init__(
        self,
        options: AdmissionOptions,
        request: AdmissionInput,
        budget: cel.Budget,
        services: cel.Services | None = None,
        *,
        explain: bool = False,
        shared: SharedValues | None = None,
    ) -> None:
        self.options = options
        self.shared = shared  # the values of the expressions several policies share (runtime/shared.py)
        self.explain = explain  # keep each mutation's result (PolicyOutcome.steps)
        self.request = request
        self.budget = budget
        self.services = services or options.services
        self.cel_request = request.cel_request()
        if request.input_size is None:  # computed once per request, however many policies see it
            limit = options.max_input_bytes
            request.input_size = approximate_size([request.object, request.old_object], limit)
        self.input_size = request.input_size
        self._namespace_labels: dict[str, str] | None = None
        self._namespace_object: Any = request.namespace_object
        self._namespace_looked_up = False
        self._base_activation: cel.Activation | None = None  # what every policy's activation shares
        # the activation of the policies without variables, params or exceptions, and the object it was
        # made for: such policies see exactly the same variables, so consecutive ones share it
        self._plain: tuple[Any, cel.Activation] | None = None
        self.encoded = decode.EncodedObjects()
        # why Kyverno's policies leave the request's object alone when it is a ReplicaSet its Deployment
        # controls ('' for any other object): a fact of the request, asked by every policy
        self.controlled_replicaset = ownership.controlled_replicaset(request.subject)

    @classmethod
    def for_request(
        cls, options: AdmissionOptions, request: AdmissionInput, shared: SharedValues | None = None
    ) -> RequestContext:
        """A context with a fresh budget of the options' timeout (mutateExisting: one per trigger or target)."""
        return cls(options, request, cel.Budget.with_timeout(options.timeout_seconds), shared=shared)

    def namespace_object(self) -> Any:
        request = self.request
        if self._namespace_object is None and request.namespace and not self._namespace_looked_up:
            self._namespace_looked_up = True  # looked up once per request, found or not (not per policy)
            resources = self.services.resources
            if resources is not None:
                try:
                    self._namespace_object = resources.get("v1", "namespaces", "", request.namespace)
                except cel.CelError:
                    self._namespace_object = None
        return self._namespace_object

    def namespace_labels(self) -> dict[str, str]:
        if self._namespace_labels is None:
            self._namespace_labels = matching.namespace_labels(self.request, self.namespace_object())
        return self._namespace_labels

    def activation(
        self, policy: CompiledPolicy, current: Any, params: Any = None, exceptions: dict[str, Any] | None = None
    ) -> cel.Activation:
        """``policy``'s activation: derived from one built (normalised, size-checked) per request."""
        if self._base_activation is None:
            self._base_activation = cel.Activation(
                old_object=self.request.old_object,
                request=self.cel_request,
                namespace_object=self.namespace_object(),
                services=self.services,
                budget=self.budget,
                max_input_bytes=self.options.max_input_bytes,
                input_size=self.input_size,
            )
        plain = params is None and exceptions is None and not policy.variables
        if plain and self._plain is not None and self._plain[0] is current:
            shared = self._plain[1]
            shared.with_object(current)  # the previous policy's mutations pointed it at their results
            return shared
        variables: Mapping[str, Any] = policy.variables
        if variables and self.shared is not None:
            variables = self.shared.variables(variables)
        derived = self._base_activation.derive(
            object=current, params=params, exceptions=exceptions, variables=variables
        )
        if plain:
            self._plain = (current, derived)
        return derived

    def exception_activation(self, current: Any) -> cel.Activation:
        return cel.Activation(
            object=current,
            old_object=self.request.old_object,
            request=self.cel_request,
            namespace_object=self.namespace_object(),
            services=self.services,
            budget=self.budget,
            input_size=0,
        )
