"""A real OCI registry on loopback for image.GetMetadata tests: Debian's ``docker-registry`` (the CNCF
distribution registry), started with a generated config and filesystem storage in a temporary
directory, and a small OCI image pushed to it with the distribution API's own uploads (POST, then
PUT of each blob by digest, then PUT of the manifest)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import socket
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BINARY = "/usr/bin/docker-registry"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


@dataclass
class PushedImage:
    reference: str  # 127.0.0.1:<port>/<repository>:<tag>
    digest: str  # the manifest's
    manifest: dict[str, Any]
    config: dict[str, Any]


@dataclass
class Registry:
    host: str  # 127.0.0.1:<port>

    def _request(self, method: str, url: str, body: bytes = b"", content_type: str = "") -> tuple[int, dict[str, str]]:
        request = urllib.request.Request(url, data=body if method != "GET" else None, method=method)
        if content_type:
            request.add_header("Content-Type", content_type)
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers)

    def push_blob(self, repository: str, data: bytes) -> str:
        digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
        _, headers = self._request("POST", f"http://{self.host}/v2/{repository}/blobs/uploads/")
        location = headers["Location"]
        if location.startswith("/"):
            location = f"http://{self.host}{location}"
        separator = "&" if "?" in location else "?"
        status, _ = self._request("PUT", f"{location}{separator}digest={digest}", data, "application/octet-stream")
        assert status == 201, status
        return digest

    def push_image(self, repository: str, tag: str, config: dict[str, Any]) -> PushedImage:
        """A one-layer OCI image (a tar holding /hello) with ``config``; returns what was pushed."""
        layer_tar = io.BytesIO()
        with tarfile.open(fileobj=layer_tar, mode="w") as archive:
            content = b"hello\n"
            info = tarfile.TarInfo("hello")
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
        layer = gzip.compress(layer_tar.getvalue(), mtime=0)
        config_bytes = json.dumps(config, sort_keys=True).encode()
        layer_digest = self.push_blob(repository, layer)
        config_digest = self.push_blob(repository, config_bytes)
        manifest = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": config_digest, "size": len(config_bytes)},
            "layers": [{"mediaType": OCI_LAYER, "digest": layer_digest, "size": len(layer)}],
        }
        body = json.dumps(manifest).encode()
        status, _ = self._request("PUT", f"http://{self.host}/v2/{repository}/manifests/{tag}", body, OCI_MANIFEST)
        assert status == 201, status
        return PushedImage(
            f"{self.host}/{repository}:{tag}", f"sha256:{hashlib.sha256(body).hexdigest()}", manifest, config
        )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def oci_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A running distribution registry on 127.0.0.1 (skipped when Debian's docker-registry is missing)."""
    binary = shutil.which("docker-registry") or (BINARY if Path(BINARY).exists() else None)
    if binary is None:
        pytest.skip("docker-registry is not installed (apt-get install -y docker-registry; .ci/run installs it)")
    root = tmp_path_factory.mktemp("registry")
    port = _free_port()
    config = root / "config.yml"
    config.write_text(
        json.dumps(  # YAML is a superset of JSON
            {
                "version": 0.1,
                "log": {"level": "error", "accesslog": {"disabled": True}},
                "storage": {"filesystem": {"rootdirectory": str(root / "data")}},
                "http": {"addr": f"127.0.0.1:{port}"},
            }
        )
    )
    log = (root / "registry.log").open("wb")
    process = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    registry = Registry(f"127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://{registry.host}/v2/", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"docker-registry did not start: {(root / 'registry.log').read_text()[-2000:]}")
            time.sleep(0.05)
        yield registry
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
