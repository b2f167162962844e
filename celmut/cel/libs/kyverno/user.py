"""Kyverno's user library (kyverno/sdk ``extensions/cel/libs/user``).

parseServiceAccount(<string>) -> <map(string, string)>
user.parseServiceAccount(<string>) -> <map(string, string)>

    Splits a service account user name ``system:serviceaccount:<namespace>:<name>`` into a map with
    Kyverno's (Go) field names ``Namespace`` and ``Name``; the name keeps any further colons. Any
    other user name gives empty strings.

        parseServiceAccount("system:serviceaccount:kube-system:ci").Name == "ci"
"""

from __future__ import annotations

from typing import Any

from celmut.cel.declarations import Library
from celmut.cel.values import no_such_overload

LIBRARY: Library = Library("kyverno.user")
fn = LIBRARY.function

_PREFIX = "system:serviceaccount:"


@fn("parseServiceAccount", ("string",), "map(string, string)")
@fn("user.parseServiceAccount", ("string",), "map(string, string)")
def parse_service_account(user: Any) -> dict[str, str]:
    if not isinstance(user, str):
        raise no_such_overload("parseServiceAccount", user)
    namespace = name = ""
    if user.startswith(_PREFIX):
        rest = user[len(_PREFIX) :]
        if ":" in rest:
            namespace, name = rest.split(":", 1)
    return {"Name": name, "Namespace": namespace}
