"""One frozen settings object from the flags to the engine (issue 26): ``serve`` and ``controller``
parse their shared flags into the same :class:`ServiceSettings`, built in one place
(:func:`celmut.service.settings.from_flags`), which each surface's frozen config holds once."""

from __future__ import annotations

import dataclasses

import pytest

from celmut import cel
from celmut.controller.run import ControllerConfig
from celmut.main import build_parser
from celmut.server import DEFAULT_BACKGROUND_USER, command
from celmut.server.run import ServeConfig
from celmut.service.settings import SURFACE_TIMEOUT_SECONDS, ServiceSettings, from_flags

SHARED_FLAGS = [
    "--policies", "policies/", "--from-cluster", "--kubeconfig", "kube.yaml", "--serve-admission-policies",
    "--policy-selector", "team=a", "--opt-out-label", "example.com/skip", "--preset-failure-policy", "Fail",
    "--http-allow", "https://api.example.com/", "--http-timeout", "3",
    "--image-registry-allow", "ghcr.io",
]  # fmt: skip
TLS = ["--tls-cert", "cert.pem", "--tls-key", "key.pem"]


def settings_of(*argv: str) -> ServiceSettings:
    service = from_flags(build_parser().parse_args(list(argv)))
    assert service is not None
    return service


def without_services(service: ServiceSettings) -> ServiceSettings:
    return dataclasses.replace(service, engine=dataclasses.replace(service.engine, services=NO_SERVICES))


NO_SERVICES = cel.Services()


def test_serve_and_controller_read_the_shared_flags_into_the_same_settings() -> None:
    served = settings_of("serve", *TLS, *SHARED_FLAGS)
    controlled = settings_of("controller", *SHARED_FLAGS)
    assert without_services(served) == without_services(controlled)  # Services holds an rng: compared apart
    assert served.http_policy == controlled.http_policy
    assert served.policy_paths == ("policies/",) and served.from_cluster and served.kubeconfig == "kube.yaml"
    assert served.serve_admission_policies and served.policy_selector == "team=a"
    assert served.opt_out_label == "example.com/skip" and served.registry.allow == ("ghcr.io",)
    assert served.http_policy == cel.HttpPolicy(allow=("https://api.example.com/",), timeout_seconds=3.0)
    assert served.engine.preset_failure_policy == "Fail"
    assert served.engine.timeout_seconds == SURFACE_TIMEOUT_SECONDS and not served.engine.report_unselected


def test_the_webhooks_own_engine_flags_reach_its_engine_settings() -> None:
    argv = ["serve", *TLS, "--policies", "p", "--timeout", "4", "--background-user", "me", "--record-provenance"]
    service = command.service_settings(build_parser().parse_args(argv))
    assert service is not None
    assert service.engine.timeout_seconds == 4.0 and service.engine.background_usernames == {"me"}
    assert service.engine.record_provenance


def test_an_unusable_allow_list_is_refused_before_any_settings_exist(capsys: pytest.CaptureFixture[str]) -> None:
    assert from_flags(build_parser().parse_args(["controller", "--policies", "p", "--http-allow", "ftp://x"])) is None
    assert "--http-allow 'ftp://x' is not an http(s) URL" in capsys.readouterr().err


def test_in_cluster_adds_only_what_the_connection_provides() -> None:
    service = settings_of("controller", *SHARED_FLAGS)
    lookup = object()
    engine = service.in_cluster(resources=lookup, opt_out=None)  # type: ignore[arg-type]
    assert engine.services.resources is lookup and engine.services.http_policy == service.http_policy
    assert dataclasses.replace(engine, services=service.engine.services) == service.engine


@pytest.mark.parametrize("config", [ServeConfig(), ControllerConfig(), ServiceSettings()], ids=type)
def test_settings_are_frozen_all_the_way_to_the_engine(config: object) -> None:
    field = dataclasses.fields(config)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(config, field, None)


def test_each_surface_holds_the_shared_settings_once() -> None:
    shared = {f.name for f in dataclasses.fields(ServiceSettings)} | {"timeout_seconds", "http_policy", "services"}
    for config in (ServeConfig, ControllerConfig):
        own = {f.name for f in dataclasses.fields(config)}
        assert "service" in own and not own & shared, config.__name__


def test_the_webhook_ignores_the_controllers_requests_by_default() -> None:
    assert ServeConfig().service.engine.background_usernames == {DEFAULT_BACKGROUND_USER}
    served = command.service_settings(build_parser().parse_args(["serve", *TLS, "--policies", "p"]))
    assert served is not None and served.engine.background_usernames == {DEFAULT_BACKGROUND_USER}
    assert ControllerConfig().service.engine.background_usernames == frozenset()  # its requests are its own
