"""The Kubernetes CEL libraries (k8s.io/apiserver/pkg/cel/library), one module per library.

Available in both profiles: lists, regex, urls, ip/cidr, quantity, semver, format, jsonpatch.
"""

from celmut.cel.declarations import Library

LIBRARIES: tuple[Library, ...] = ()
