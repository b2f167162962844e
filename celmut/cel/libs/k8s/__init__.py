"""The Kubernetes CEL libraries (k8s.io/apiserver/pkg/cel/library), one module per library.

Available in both profiles: lists, regex, urls, ip/cidr, quantity, semver, format, jsonpatch, authz
(whose ``authorizer`` variable only the kubernetes profile declares).
Go behaviour they depend on is ported in helper modules: :mod:`.netip` and :mod:`.neturl` (Go's
``net/netip`` and ``net/url``), :mod:`.resource` (apimachinery's ``resource.Quantity``) and
:mod:`celmut.cel.libs.golang` (``strconv.Quote``, ``math.Pow10``); :mod:`.support` has the shared argument checks
and cost formulas.
"""

from celmut.cel.declarations import Library
from celmut.cel.libs.k8s import authz, cidr, format, ip, jsonpatch, lists, quantity, regex, semver, urls

LIBRARIES: tuple[Library, ...] = (
    lists.LIBRARY,
    regex.LIBRARY,
    urls.LIBRARY,
    ip.LIBRARY,
    cidr.LIBRARY,
    quantity.LIBRARY,
    semver.LIBRARY,
    format.LIBRARY,
    jsonpatch.LIBRARY,
    authz.LIBRARY,
)
"""CEL function libraries, one module per library; :mod:`celmut.cel.environment` assembles them."""
