"""image.GetMetadata in the cluster (celmut.kube.registry) against a real distribution registry on
loopback: Kyverno's image data shape (pkg/imageverification/imagedataloader/loader.go FetchImageData),
the allow-list, the cache, the deadline, and pull secrets only when allowed."""

from __future__ import annotations

import base64
import json
import socket
import threading
from typing import Any

import pytest

from celmut.cel.lookups import PULL_SECRETS, LookupFailed, RegistryPolicy
from celmut.kube.client import Cluster
from celmut.kube.registry import RegistryDenied, RegistryImages, docker_credentials
from tests.fakekube import FakeApiServer

from .registry_support import PushedImage, Registry, oci_registry  # noqa: F401 (the fixture)

CONFIG = {
    "architecture": "amd64",
    "os": "linux",
    "config": {"Labels": {"team": "payments"}, "User": "1000"},
    "rootfs": {"type": "layers", "diff_ids": []},
}


@pytest.fixture(scope="module")
def pushed(oci_registry: Registry) -> PushedImage:  # noqa: F811
    return oci_registry.push_image("celmut/app", "v1", CONFIG)


def policy_for(registry: Registry, **kwargs: Any) -> RegistryPolicy:
    return RegistryPolicy(allow=(registry.host,), insecure=(registry.host,), **kwargs)


def test_image_data_is_kyvernos_shape_read_from_the_registry(oci_registry: Registry, pushed: PushedImage) -> None:  # noqa: F811
    data = RegistryImages(policy_for(oci_registry)).get_metadata(pushed.reference)
    repository = "celmut/app"
    assert data == {
        "image": pushed.reference,
        "registry": oci_registry.host,
        "repository": repository,
        "identifier": "v1",
        "tag": "v1",
        "digest": pushed.digest,
        "resolvedImage": f"{oci_registry.host}/{repository}:v1@{pushed.digest}",
        "manifest": pushed.manifest,
        "config": CONFIG,
    }


def test_a_digest_reference_resolves_to_itself(oci_registry: Registry, pushed: PushedImage) -> None:  # noqa: F811
    reference = f"{oci_registry.host}/celmut/app@{pushed.digest}"
    data = RegistryImages(policy_for(oci_registry)).get_metadata(reference)
    assert (data["identifier"], data["digest"], "tag" in data) == (pushed.digest, pushed.digest, False)
    assert data["config"] == CONFIG


def test_a_registry_off_the_allow_list_is_never_contacted(oci_registry: Registry, pushed: PushedImage) -> None:  # noqa: F811
    images = RegistryImages(RegistryPolicy(allow=("ghcr.io",)))
    with pytest.raises(RegistryDenied, match=f"registry {oci_registry.host} is not on the image registry allow-list"):
        images.get_metadata(pushed.reference)
    assert images.fetches == 0


def test_answers_are_cached_for_their_ttl_and_the_cache_is_bounded(oci_registry: Registry, pushed: PushedImage) -> None:  # noqa: F811
    now = [0.0]
    images = RegistryImages(policy_for(oci_registry, cache_seconds=60, cache_entries=1), clock=lambda: now[0])
    first = images.get_metadata(pushed.reference)
    first["config"]["os"] = "changed by the caller"  # the cache hands out copies
    assert images.get_metadata(pushed.reference)["config"] == CONFIG and images.fetches == 1
    now[0] = 61.0
    images.get_metadata(pushed.reference)
    assert images.fetches == 2  # expired
    images.get_metadata(f"{oci_registry.host}/celmut/app@{pushed.digest}")  # evicts the tag (one entry)
    images.get_metadata(pushed.reference)
    assert images.fetches == 4


def test_a_missing_image_is_an_error_naming_the_answer(oci_registry: Registry, pushed: PushedImage) -> None:  # noqa: F811
    with pytest.raises(LookupFailed, match="HTTP 404"):
        RegistryImages(policy_for(oci_registry)).get_metadata(f"{oci_registry.host}/celmut/app:absent")


def test_a_silent_registry_times_out_within_the_deadline() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    host = f"127.0.0.1:{listener.getsockname()[1]}"
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True).start()
    try:
        images = RegistryImages(RegistryPolicy(allow=(host,), insecure=(host,), timeout_seconds=0.3))
        with pytest.raises(LookupFailed, match=r"Timeout|timed out"):
            images.get_metadata(f"{host}/slow/app:v1")
    finally:
        for conn in accepted:
            conn.close()
        listener.close()


def dockerconfig_secret(name: str, registry: str, user: str, password: str) -> dict[str, Any]:
    config = {"auths": {registry: {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}}}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "default"},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(json.dumps(config).encode()).decode()},
    }


def test_pull_secret_credentials_are_found_per_registry() -> None:
    secret = dockerconfig_secret("pull", "https://registry.example.com", "robot", "s3cret")
    assert docker_credentials(secret, "registry.example.com") == ("robot", "s3cret")
    assert docker_credentials(secret, "ghcr.io") is None


def test_pull_secrets_are_read_only_when_allowed(
    fake_apiserver: FakeApiServer,
    cluster: Cluster,
    oci_registry: Registry,  # noqa: F811
    pushed: PushedImage,
) -> None:
    fake_apiserver.store.create(dockerconfig_secret("pull", oci_registry.host, "robot", "s3cret"))
    token = PULL_SECRETS.set(("default", ("pull",)))
    try:
        RegistryImages(policy_for(oci_registry), cluster).get_metadata(pushed.reference)
        assert not fake_apiserver.requests_matching("GET", r"/secrets/")  # off by default: anonymous
        allowed = RegistryImages(policy_for(oci_registry, pull_secrets=True), cluster)
        assert allowed.get_metadata(pushed.reference)["digest"] == pushed.digest
        assert fake_apiserver.requests_matching("GET", r"/namespaces/default/secrets/pull$")
    finally:
        PULL_SECRETS.reset(token)
