"""Kyverno's image libraries: rows from kyverno/sdk ``extensions/cel/libs/image/*_test.go`` plus
go-containerregistry's normalisation (``name.ParseReference``), and ``image.GetMetadata`` with a fake
registry at the provider seam."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.cel.lookups import Services
from tests.cel.helpers import Err, cases, check_case

DIGEST = "sha256:6aefddb645ee6963afd681b1845c661d0ea4c3b20ab9db86d9e753b203d385f2"
APISERVER = "registry.k8s.io/kube-apiserver-arm64"

KYVERNO_ROWS = [
    (f'parseImageReference("{APISERVER}:latest") == parseImageReference("{APISERVER}:latest")', True),
    (f'parseImageReference("{APISERVER}:not-latest") == parseImageReference("{APISERVER}:latest")', False),
    (f'parseImageReference("{APISERVER}:@")', Err("evaluation", f"could not parse reference: {APISERVER}:@")),
    (f'isImage("{APISERVER}:latest")', True),
    (f'isImage("{APISERVER}:@")', False),
    ("isImage(0)", Err("compile", "found no matching overload for 'isImage'")),
    (f'parseImageReference("{APISERVER}").containsDigest()', False),
    (f'parseImageReference("{APISERVER}:latest").containsDigest()', False),
    (f'parseImageReference("{APISERVER}@{DIGEST}").containsDigest()', True),
    (f'parseImageReference("{APISERVER}:latest@{DIGEST}").containsDigest()', True),
    (f'parseImageReference("{APISERVER}").registry() == "registry.k8s.io"', True),
    (f'parseImageReference("{APISERVER}").registry().matches("(registry.k8s.io|ghcr.io)")', True),
    (f'parseImageReference("{APISERVER}").repository() == "kube-apiserver-arm64"', True),
    (f'parseImageReference("{APISERVER}:testtag").identifier()', "testtag"),
    (f'parseImageReference("{APISERVER}").identifier()', "latest"),
    (f'parseImageReference("{APISERVER}@{DIGEST}").identifier()', DIGEST),
    # newer sdk (identifierFromReference): a tagged digest reference's identifier keeps the tag
    (f'parseImageReference("{APISERVER}:latest@{DIGEST}").identifier()', f"latest@{DIGEST}"),
    (f'parseImageReference("{APISERVER}:testtag").tag()', "testtag"),
    (f'parseImageReference("{APISERVER}").tag()', "latest"),
    (f'parseImageReference("{APISERVER}@{DIGEST}").tag()', ""),
    (f'parseImageReference("{APISERVER}:v1.2.3@{DIGEST}").tag()', "v1.2.3"),
    (f'parseImageReference("registry.example:5000/repo@{DIGEST}").tag()', ""),  # a port is not a tag
    (f'parseImageReference("fictional.registry.example:10443/imagename:my_tag@{DIGEST}").tag()', "my_tag"),
    (f'parseImageReference("{APISERVER}").digest()', ""),
    (f'parseImageReference("{APISERVER}:testtag").digest()', ""),
    (f'parseImageReference("{APISERVER}@{DIGEST}").digest()', DIGEST),
    (f'parseImageReference("{APISERVER}:latest@{DIGEST}").digest() == "{DIGEST}"', True),
]

NORMALISATION = [
    # go-containerregistry: Docker Hub is index.docker.io, single names get library/
    ('parseImageReference("nginx").registry()', "index.docker.io"),
    ('parseImageReference("nginx").repository()', "library/nginx"),
    ('parseImageReference("nginx").tag()', "latest"),
    ('parseImageReference("docker.io/nginx:1.25").registry()', "index.docker.io"),
    ('parseImageReference("docker.io/bitnami/redis").repository()', "bitnami/redis"),
    ('parseImageReference("index.docker.io/library/nginx").repository()', "library/nginx"),
    ('parseImageReference("localhost:5000/app:dev").registry()', "localhost:5000"),
    ('parseImageReference("localhost:5000/app:dev").repository()', "app"),
    # a first component without '.' or ':' is a Docker Hub namespace
    ('parseImageReference("localhost/app").registry()', "index.docker.io"),
    ('parseImageReference("localhost/app").repository()', "localhost/app"),
    ('parseImageReference("ghcr.io/kyverno/kyverno:v1.12.0").repository()', "kyverno/kyverno"),
    ('parseImageReference("[::1]:5000/app").registry()', "[::1]:5000"),
    ('[image("nginx:1.25")].map(i, i.tag())', ["1.25"]),  # the deprecated alias
    ('parseImageReference("nginx:").tag()', "latest"),
    ('isImage("Nginx")', False),  # repositories are lower-case
    ('isImage("a")', False),  # and at least two characters
    ('isImage("nginx@sha256:abc")', False),
    (f'isImage("nginx:{"a" * 127}")', True),  # tags are at most 127 characters
    (f'isImage("nginx:{"a" * 128}")', False),
    ('isImage("https://ghcr.io/app")', False),
    ('isImage("registry with space/app")', False),
    ('isImage("user@registry.example.com/app")', False),
    ('isImage("")', False),
    ('parseImageReference("http://ghcr.io/app")', Err("evaluation", "must not contain a URL scheme")),
    ('type(image("nginx"))', "kyverno.image"),
    ("parseImageReference(dyn(1))", Err("evaluation", "no such overload")),
]

# the MutatingPolicy documentation's example
DOCS = [
    (
        "object.spec.containers.map(e, image(e.image))"
        " + object.spec.?initContainers.orValue([]).map(e, image(e.image))"
        " + object.spec.?ephemeralContainers.orValue([]).map(e, image(e.image))",
        ["ghcr.io/org/web:1.0", "nginx"],
    ),
    (
        '{"image-registry": image(object.spec.containers[0].image).registry(),'
        ' "image-repository": image(object.spec.containers[0].image).repository()}',
        {"image-registry": "ghcr.io", "image-repository": "org/web"},
    ),
]
POD = {"spec": {"containers": [{"image": "ghcr.io/org/web:1.0"}], "initContainers": [{"image": "nginx"}]}}


@cases(KYVERNO_ROWS)
def test_kyverno_image_rows(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(NORMALISATION)
def test_normalisation(expression: str, expected: Any) -> None:
    check_case(expression, expected)


@cases(DOCS)
def test_documentation_example(expression: str, expected: Any) -> None:
    check_case(expression, expected, object=POD)


class FakeRegistry:
    def get_metadata(self, reference: str) -> dict[str, Any]:
        if reference == "private.example.com/app":
            raise PermissionError("UNAUTHORIZED: authentication required")
        return {"image": reference, "resolvedImage": f"{reference}@{DIGEST}", "config": {"config": {"User": "1000"}}}


METADATA = [
    ('image.GetMetadata("ghcr.io/org/app:1").resolvedImage', f"ghcr.io/org/app:1@{DIGEST}"),
    ('image.getMetadata("ghcr.io/org/app:1").config.config.User', "1000"),
    ('image.GetMetadata("private.example.com/app")', Err("evaluation", "failed to get image data: UNAUTHORIZED")),
    ("image.GetMetadata(1)", Err("compile", "no matching overload")),
]


@cases(METADATA)
def test_get_metadata(expression: str, expected: Any) -> None:
    check_case(expression, expected, services=Services(images=FakeRegistry()))


@pytest.mark.parametrize("expression", ['image.GetMetadata("nginx")', 'image.getMetadata("nginx")'])
def test_get_metadata_without_registry(expression: str) -> None:
    check_case(expression, Err("evaluation", "no image registry lookup is configured"))


@pytest.mark.parametrize(
    "expression", ['image("nginx")', 'parseImageReference("nginx")', 'isImage("nginx")', 'image.GetMetadata("nginx")']
)
def test_kubernetes_profile_has_no_image_library(expression: str) -> None:
    check_case(expression, Err("compile", "undeclared reference"), profile="kubernetes")


class SecretsSeen:
    """A provider recording the pull secrets ``image.GetMetadata`` hands it (celmut.cel.lookups.PULL_SECRETS)."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def get_metadata(self, reference: str) -> dict[str, Any]:
        from celmut.cel.lookups import PULL_SECRETS

        self.seen.append(PULL_SECRETS.get())
        return {"image": reference}


def _pod_spec() -> dict[str, Any]:
    return {"containers": [{"name": "app", "image": "ghcr.io/org/app:1"}], "imagePullSecrets": [{"name": "regcred"}]}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"metadata": {"namespace": "shop"}, "spec": _pod_spec()}, ("shop", ("regcred",))),  # a Pod
        (  # a Deployment: its pod template's secrets
            {"metadata": {"namespace": "shop"}, "spec": {"template": {"spec": _pod_spec()}}},
            ("shop", ("regcred",)),
        ),
        (  # a CronJob: jobTemplate → template
            {"metadata": {"namespace": "shop"}, "spec": {"jobTemplate": {"spec": {"template": {"spec": _pod_spec()}}}}},
            ("shop", ("regcred",)),
        ),
        ({"metadata": {"namespace": "shop"}, "spec": {"containers": []}}, None),  # no pull secrets: anonymous
    ],
)
def test_get_metadata_hands_the_provider_the_objects_pull_secrets(obj: dict[str, Any], expected: Any) -> None:
    provider = SecretsSeen()
    check_case(
        'image.GetMetadata("ghcr.io/org/app:1").image',
        "ghcr.io/org/app:1",
        services=Services(images=provider),
        object=obj,
    )
    assert provider.seen == [expected]
