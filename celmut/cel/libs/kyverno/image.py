"""Kyverno's image libraries (kyverno/sdk ``extensions/cel/libs/image`` and ``imagedata``).

References are parsed as Kyverno parses them, with go-containerregistry's ``name.ParseReference``
(default options): Docker Hub is ``index.docker.io`` (``docker.io`` is rewritten to it),
single-component Docker Hub repositories get ``library/``, the default tag is ``latest``, a
reference with both a tag and a digest is a digest reference, repositories are lower-case and at
least two characters long, and digests must be ``sha256:`` with 64 hex digits.

parseImageReference(<string>) -> <kyverno.image>
image(<string>) -> <kyverno.image>   (deprecated alias)

    Parses a reference; an invalid one is an error ``could not parse reference: …``.

        parseImageReference("nginx").registry() == "index.docker.io"

isImage(<string>) -> <bool>

    Whether the string parses as an image reference.

        isImage("registry.k8s.io/pause:3.9") == true

<kyverno.image>.registry() / .repository() / .identifier() / .tag() / .digest() -> <string>
<kyverno.image>.containsDigest() -> <bool>

    ``identifier()`` is the tag, the digest, or ``tag@digest`` when both are present; ``tag()`` and
    ``digest()`` are ``""`` when absent (a digest-only reference has no tag).

        parseImageReference("ghcr.io/org/app:v1@sha256:…").tag() == "v1"

image.GetMetadata(<string> reference) -> <dyn>   (alias ``image.getMetadata``)

    Registry metadata of an image (manifest, config, resolved digest) through
    :attr:`Services.images <celmut.cel.lookups.Services>`; fails with
    :class:`~celmut.cel.lookups.LookupUnavailable` when none is configured.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from celmut.cel.declarations import Library
from celmut.cel.errors import CelEvaluationError, describe
from celmut.cel.libs.kyverno.json import to_cel_value
from celmut.cel.lookups import PULL_SECRETS, LookupFailed, LookupUnavailable, before_blocking
from celmut.cel.values import no_such_overload, to_plain

LIBRARY: Library = Library("kyverno.image")
fn, method = LIBRARY.function, LIBRARY.method

DEFAULT_REGISTRY = "index.docker.io"
DEFAULT_TAG = "latest"
_TAG_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-.ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_REPOSITORY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-./")
_DIGEST_CHARS = frozenset("sh:0123456789abcdef")
_HOST = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:\[\]<>\"]|%[0-9A-Fa-f]{2})*\Z")
_BRACKETED = re.compile(r"\[[0-9A-Fa-f:.]+(?:%25[A-Za-z0-9\-._~]+)?\](?::[0-9]*)?\Z")


class BadName(ValueError):
    pass


def _check_element(what: str, element: str, allowed: frozenset[str], low: int, high: int) -> None:
    if not low <= len(element) <= high:
        raise BadName(f"{what} must be between {low} and {high} characters in length: {element}")
    if any(c not in allowed for c in element):
        raise BadName(f"{what} can only contain the characters `{''.join(sorted(allowed))}`: {element}")


def _check_registry(name: str) -> None:
    """Go's ``url.Parse("//" + name).Host == name``: a valid RFC 3986 authority without userinfo."""
    if not name:
        return
    valid = not any(c in name for c in "@/?#") and all(0x21 <= ord(c) <= 0x7E for c in name)
    if valid and name.startswith("["):
        valid = _BRACKETED.match(name) is not None
    elif valid:
        host, colon, port = name.rpartition(":")
        valid = (port.isdigit() or port == "") if colon else True
        valid = valid and _HOST.match(host if colon else name) is not None
    if not valid:
        raise BadName(f"registries must be valid RFC 3986 URI authorities: {name}")


class Repository:
    __slots__ = ("registry", "repository")

    def __init__(self, name: str) -> None:
        if not name:
            raise BadName("a repository name must be specified")
        registry, repository = "", name
        first, sep, rest = name.partition("/")
        if sep and ("." in first or ":" in first):
            registry, repository = first, rest
        _check_element("repository", repository, _REPOSITORY_CHARS, 2, 255)
        _check_registry(registry)
        if not registry or registry == "docker.io":
            registry = DEFAULT_REGISTRY
        self.registry, self.repository = registry, repository
        if self.implicit_namespace:
            _check_element("repository", self.repository_str, _REPOSITORY_CHARS, 2, 255)

    @property
    def implicit_namespace(self) -> bool:
        return "/" not in self.repository and self.registry == DEFAULT_REGISTRY

    @property
    def repository_str(self) -> str:
        return f"library/{self.repository}" if self.implicit_namespace else self.repository

    @property
    def name(self) -> str:
        return f"{self.registry}/{self.repository_str}"


def _parse_tag(name: str) -> tuple[Repository, str]:
    base, tag = name, ""
    parts = name.split(":")
    if len(parts) > 1 and "/" not in parts[-1]:
        base, tag = ":".join(parts[:-1]), parts[-1]
    if tag:
        _check_element("tag", tag, _TAG_CHARS, 1, 127)
    return Repository(base), tag


def _parse_digest(name: str) -> tuple[Repository, str]:
    parts = name.split("@")
    if len(parts) != 2:
        raise BadName(f"a digest must contain exactly one '@' separator (e.g. registry/repository@digest) saw: {name}")
    base, digest = parts
    _check_element("digest", digest, _DIGEST_CHARS, 71, 71)
    with contextlib.suppress(BadName):
        base = _parse_tag(base)[0].name
    return Repository(base), digest


@LIBRARY.opaque("kyverno.image")
class Image:
    """A parsed image reference (a go-containerregistry ``name.Tag`` or ``name.Digest``)."""

    __slots__ = ("_digest", "_repo", "_tag", "original")

    def __init__(self, reference: str) -> None:
        if reference.startswith(("http://", "https://")):
            raise CelEvaluationError(
                f"image reference must not contain a URL scheme (http:// or https://): {describe(reference)}"
            )
        self.original = reference
        try:
            self._repo, self._tag = _parse_tag(reference)
            self._digest = ""
        except BadName:
            try:
                self._repo, self._digest = _parse_digest(reference)
                self._tag = ""
            except BadName:
                raise CelEvaluationError(f"could not parse reference: {reference}") from None

    def registry(self) -> str:
        return self._repo.registry

    def repository(self) -> str:
        return self._repo.repository_str

    def digest(self) -> str:
        return self._digest

    def tag(self) -> str:
        if not self._digest:
            return self._tag or DEFAULT_TAG
        before = self.original.split("@", 1)[0]
        colon = before.rfind(":")
        return before[colon + 1 :] if colon != -1 and colon > before.rfind("/") else ""

    def identifier(self) -> str:
        if not self._digest:
            return self.tag()
        tag = self.tag()
        return f"{tag}@{self._digest}" if tag else self._digest

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Image):
            return NotImplemented
        return self.original == other.original

    def __hash__(self) -> int:
        return hash(self.original)

    def __repr__(self) -> str:
        return f"image({self.original!r})"

    def to_plain(self) -> str:
        return self.original


def _image(value: Any, function: str) -> Image:
    if not isinstance(value, Image):
        raise no_such_overload(function, value)
    return value


@fn("parseImageReference", ("string",), "kyverno.image")
@fn("image", ("string",), "kyverno.image")
def parse_image_reference(reference: Any) -> Image:
    if not isinstance(reference, str):
        raise no_such_overload("parseImageReference", reference)
    return Image(reference)


@fn("isImage", ("string",), "bool")
def is_image(reference: Any) -> bool:
    if not isinstance(reference, str):
        raise no_such_overload("isImage", reference)
    try:
        Image(reference)
    except CelEvaluationError:
        return False
    return True


@method("registry", "kyverno.image", (), "string")
def registry(image: Any) -> str:
    return _image(image, "registry").registry()


@method("repository", "kyverno.image", (), "string")
def repository(image: Any) -> str:
    return _image(image, "repository").repository()


@method("identifier", "kyverno.image", (), "string")
def identifier(image: Any) -> str:
    return _image(image, "identifier").identifier()


@method("tag", "kyverno.image", (), "string")
def tag(image: Any) -> str:
    return _image(image, "tag").tag()


@method("digest", "kyverno.image", (), "string")
def digest(image: Any) -> str:
    return _image(image, "digest").digest()


@method("containsDigest", "kyverno.image", (), "bool")
def contains_digest(image: Any) -> bool:
    return bool(_image(image, "containsDigest").digest())


def get_metadata(ctx: Any, function: str, reference: Any) -> Any:
    if not isinstance(reference, str):
        raise no_such_overload(function, reference)
    provider = ctx.services.images
    if provider is None:
        raise LookupUnavailable(f"{function}: no image registry lookup is configured")
    before_blocking(function)
    token = PULL_SECRETS.set(_pull_secrets(ctx))
    try:
        return to_cel_value(provider.get_metadata(reference))
    except LookupUnavailable:
        raise
    except Exception as ex:  # a provider may fail in any way; report it as a lookup failure
        detail = ex.message if isinstance(ex, CelEvaluationError) else (str(ex) or type(ex).__name__)
        raise LookupFailed(f"{function}({describe(reference)}): failed to get image data: {detail}") from ex
    finally:
        PULL_SECRETS.reset(token)


def _pull_secrets(ctx: Any) -> tuple[str, tuple[str, ...]] | None:
    """The namespace and ``imagePullSecrets`` of the object evaluated (a pod, or a pod template of a
    Deployment, Job, CronJob, …), for a provider reading the registry with them."""
    variables = getattr(ctx, "vars", None) or {}
    obj = to_plain(variables.get("object")) if "object" in variables else None
    if not isinstance(obj, dict):
        return None
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    if not namespace and "request" in variables:
        request = to_plain(variables["request"])
        namespace = str(request.get("namespace") or "") if isinstance(request, dict) else ""
    spec = obj.get("spec") or {}
    for _ in range(3):  # pod, template (Deployment, Job, …), jobTemplate (CronJob)
        if not isinstance(spec, dict):
            return None
        if "imagePullSecrets" in spec or "containers" in spec:
            break
        outer = spec.get("jobTemplate") if "jobTemplate" in spec else spec.get("template")
        spec = (outer or {}).get("spec") if isinstance(outer, dict) else None
    secrets = spec.get("imagePullSecrets") if isinstance(spec, dict) else None
    names = tuple(str(s.get("name")) for s in secrets or [] if isinstance(s, dict) and s.get("name"))
    return (namespace, names) if names else None


@fn("image.GetMetadata", ("string",), "dyn", context=True, pure=False)
def get_metadata_pascal(ctx: Any, reference: Any) -> Any:
    return get_metadata(ctx, "image.GetMetadata", reference)


@fn("image.getMetadata", ("string",), "dyn", context=True, pure=False)
def get_metadata_camel(ctx: Any, reference: Any) -> Any:
    return get_metadata(ctx, "image.getMetadata", reference)
