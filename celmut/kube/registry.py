"""``image.GetMetadata`` in the cluster: image data read from the registry (OCI distribution API).

What Kyverno's ``imagedataloader.FetchImageData`` (kyverno/kyverno
``pkg/imageverification/imagedataloader/loader.go``) returns, through the ``oras`` client (its token
and basic auth flows, its request code): the reference's ``image``, ``registry``, ``repository``,
``identifier``, ``tag`` or ``digest``, the resolved ``digest`` and ``resolvedImage``, the
``manifest`` (for an index, the ``linux/amd64`` image's, go-containerregistry's default platform, with
the index itself as ``imageIndex``) and the image ``config``. Documents are the registry's JSON as
sent (Kyverno re-encodes Go structs, which adds empty fields such as ``"os": ""``).

Bounded and safe for the admission path: only registries on :class:`~celmut.cel.RegistryPolicy`
``allow`` are contacted; one image's requests share ``timeout_seconds`` (no retry loop: oras's own
retry decorator, which sleeps seconds between tries, is bypassed); documents over ``max_bytes`` are
refused; answers are cached ``cache_seconds`` for at most ``cache_entries`` images. Credentials:
anonymous (a registry's anonymous token flow included), or — only with ``pull_secrets`` on, which
needs RBAC to read Secrets — the ``kubernetes.io/dockerconfigjson`` / ``dockercfg`` Secrets the pod
names in ``imagePullSecrets``, as the kubelet uses them.
"""

from __future__ import annotations

import base64
import collections
import fnmatch
import functools
import hashlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import oras.provider
import orjson

from celmut.cel.libs.kyverno.image import DEFAULT_REGISTRY, Image
from celmut.cel.lookups import PULL_SECRETS, LookupFailed, RegistryPolicy
from celmut.kube.client import Cluster, ClusterError

MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
_INDEX_TYPES = frozenset(MANIFEST_TYPES[1::2])
DOCKER_HUB_API = "registry-1.docker.io"  # go-containerregistry's name.Registry.RegistryStr for index.docker.io
PLATFORM = ("linux", "amd64")  # remote.Image's default platform
# oras's do_request sleeps and retries up to five times (3 s, 5 s, 11 s, …): too long inside an admission.
_ONE_TRY = oras.provider.Registry.do_request.__wrapped__

Credentials = tuple[str, str]  # (username, password)


class RegistryDenied(LookupFailed):
    """The image's registry is not on the allow-list."""


def registry_allowed(registry: str, allow: tuple[str, ...] | list[str] | Any) -> bool:
    host = registry.lower()
    return any(fnmatch.fnmatchcase(host, pattern.lower()) for pattern in allow)


def docker_credentials(secret: Mapping[str, Any], registry: str) -> Credentials | None:
    """The credentials a pull Secret holds for ``registry`` (``.dockerconfigjson`` or ``.dockercfg``)."""
    data = secret.get("data") or {}
    raw = data.get(".dockerconfigjson") or data.get(".dockercfg")
    if not raw:
        return None
    try:
        config = orjson.loads(base64.b64decode(raw))
    except (ValueError, orjson.JSONDecodeError):
        return None
    auths = config.get("auths", config) if isinstance(config, dict) else {}
    for key, entry in (auths or {}).items():
        host = str(key).removeprefix("https://").removeprefix("http://").split("/", 1)[0]
        if host in (registry, "docker.io" if registry == DEFAULT_REGISTRY else registry) and isinstance(entry, dict):
            if entry.get("username"):
                return str(entry["username"]), str(entry.get("password") or "")
            if entry.get("auth"):
                user, _, password = base64.b64decode(str(entry["auth"])).decode().partition(":")
                return user, password
    return None


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    """A copy the caller may change (CEL values are built from it) without touching the cache."""
    copied: dict[str, Any] = orjson.loads(orjson.dumps(data))
    return copied


class _Client(oras.provider.Registry):  # type: ignore[misc]
    """oras with one try per request and a deadline shared by an image's requests."""

    def __init__(self, insecure: bool, deadline: float) -> None:
        super().__init__(insecure=insecure, auth_backend="token")
        self.deadline = deadline
        self.session.request = functools.partial(self._timed, self.session.request)

    def _timed(self, request: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("registry request timed out")
        kwargs["timeout"] = remaining
        return request(*args, **kwargs)

    def do_request(self, *args: Any, **kwargs: Any) -> Any:
        return _ONE_TRY(self, *args, **kwargs)


class RegistryImages:
    """An :class:`celmut.cel.lookups.ImageMetadataLookup` over real registries."""

    def __init__(
        self,
        policy: RegistryPolicy,
        cluster: Cluster | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = policy
        self.cluster = cluster if policy.pull_secrets else None
        self.clock = clock
        self._cache: collections.OrderedDict[tuple[str, tuple[str, ...]], tuple[float, dict[str, Any]]] = (
            collections.OrderedDict()
        )
        self._lock = threading.Lock()
        self.fetches = 0

    def get_metadata(self, reference: str) -> dict[str, Any]:
        image = Image(reference)  # raises Kyverno's "could not parse reference" error
        registry = image.registry()
        if not registry_allowed(registry, self.policy.allow):
            raise RegistryDenied(f"registry {registry} is not on the image registry allow-list")
        secrets = PULL_SECRETS.get()
        key = (reference, secrets[1] if secrets is not None and self.cluster is not None else ())
        now = self.clock()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and cached[0] > now:
                self._cache.move_to_end(key)
                return _copy(cached[1])
        data = self._fetch(image, self._credentials(registry, secrets))
        with self._lock:
            self._cache[key] = (now + self.policy.cache_seconds, data)
            self._cache.move_to_end(key)
            while len(self._cache) > self.policy.cache_entries:
                self._cache.popitem(last=False)
        return _copy(data)

    def _credentials(self, registry: str, secrets: tuple[str, tuple[str, ...]] | None) -> Credentials | None:
        if self.cluster is None or secrets is None:
            return None
        namespace, names = secrets
        for name in names:
            try:
                secret = self.cluster.get("v1", "secrets", namespace, name)
            except ClusterError:
                continue  # the kubelet skips a missing pull secret too
            found = docker_credentials(secret, registry)
            if found is not None:
                return found
        return None

    def _get(self, client: _Client, url: str, accept: str) -> tuple[bytes, str, str]:
        response = client.do_request(url, "GET", headers={"Accept": accept})
        if response.status_code != 200:
            raise LookupFailed(f"GET {url}: HTTP {response.status_code}: {response.text[:300]}")
        body: bytes = response.content
        if len(body) > self.policy.max_bytes:
            raise LookupFailed(f"GET {url}: {len(body)} bytes, over the limit of {self.policy.max_bytes}")
        media_type = str(response.headers.get("Content-Type") or "").split(";")[0].strip()
        digest = str(response.headers.get("Docker-Content-Digest") or "")
        return body, media_type, digest or f"sha256:{hashlib.sha256(body).hexdigest()}"

    def _fetch(self, image: Image, credentials: Credentials | None) -> dict[str, Any]:
        self.fetches += 1
        registry = image.registry()
        index, manifest, config, digest = self._fetch_documents(image, registry, credentials)
        return _image_data(image, registry, digest, index, manifest, config)

    def _fetch_documents(
        self, image: Image, registry: str, credentials: Credentials | None
    ) -> tuple[dict[str, Any] | None, dict[str, Any], Any, str]:
        """GET the image's manifest (through its index, if any) and config: (index, manifest, config, digest)."""
        host = DOCKER_HUB_API if registry == DEFAULT_REGISTRY else registry
        insecure = registry_allowed(registry, self.policy.insecure)
        client = _Client(insecure, time.monotonic() + self.policy.timeout_seconds)
        try:
            if credentials is not None:
                client.auth.set_basic_auth(*credentials)
            base = f"{client.prefix}://{host}/v2/{image.repository()}"
            reference = image.digest() or image.tag()
            body, media_type, digest = self._get(client, f"{base}/manifests/{reference}", ", ".join(MANIFEST_TYPES))
            manifest = orjson.loads(body)
            media_type = str(manifest.get("mediaType") or media_type)
            index = None
            if media_type in _INDEX_TYPES or "manifests" in manifest:
                index = manifest
                manifest = self._platform_manifest(client, base, image, index)
            config_digest = str((manifest.get("config") or {}).get("digest") or "")
            body, _, _ = self._get(client, f"{base}/blobs/{config_digest}", "*/*")
            config = orjson.loads(body)
        except (OSError, ValueError) as ex:  # connection, timeout, JSON (requests' errors are OSErrors)
            raise LookupFailed(f"{image.original}: {type(ex).__name__}: {ex}") from None
        finally:
            client.session.close()
        return index, manifest, config, digest

    def _platform_manifest(self, client: _Client, base: str, image: Image, index: dict[str, Any]) -> Any:
        """GET the manifest of the index's child for ``PLATFORM``."""
        chosen = next(
            (
                m
                for m in index.get("manifests") or []
                if (m.get("platform") or {}).get("os") == PLATFORM[0]
                and (m.get("platform") or {}).get("architecture") == PLATFORM[1]
            ),
            None,
        )
        if chosen is None:
            raise LookupFailed(f"no child with platform {PLATFORM[0]}/{PLATFORM[1]} in index {image.original}")
        body, _, _ = self._get(client, f"{base}/manifests/{chosen['digest']}", ", ".join(MANIFEST_TYPES))
        return orjson.loads(body)


def _image_data(
    image: Image, registry: str, digest: str, index: dict[str, Any] | None, manifest: Any, config: Any
) -> dict[str, Any]:
    """The image data a lookup returns: the reference's parts, the resolved digest and the fetched documents."""
    name = f"{registry}/{image.repository()}"
    data: dict[str, Any] = {
        "image": image.original,
        "registry": registry,
        "repository": image.repository(),
    }
    if image.digest():
        data |= {
            "identifier": image.digest(),
            "digest": image.digest(),
            "resolvedImage": f"{name}@{image.digest()}",
        }
    else:
        data |= {
            "identifier": image.tag(),
            "tag": image.tag(),
            "digest": digest,
            "resolvedImage": f"{name}:{image.tag()}@{digest}",
        }
    if index is not None:
        data["imageIndex"] = index
    data["manifest"] = manifest
    data["config"] = config
    return data
