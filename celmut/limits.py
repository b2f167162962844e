"""Size limits every floor shares: one home, so the webhook, the engine and the CEL layer agree.

>>> from celmut.limits import MAX_REQUEST_BYTES
>>> MAX_REQUEST_BYTES
3145728
"""

from __future__ import annotations

# The API server stores no object larger than its request limit: 3 MiB, ``MaxRequestBodyBytes`` in
# k8s.io/apiserver (pkg/server/config.go); etcd's own default is 1.5 MiB (``--max-request-bytes``).
MAX_REQUEST_BYTES = 3 * 1024 * 1024

# The decision ledger's Leases (celmut.kube.decision_ledger): the webhook's RBAC names each of them
# (celmut.install.rbac, the chart's rbac.yaml), so their number is shared here.
DECISION_LEDGER_STRIPES = 32
