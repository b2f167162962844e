"""Run the playground: bind, pick TLS (off on loopback, required elsewhere), serve with uvicorn.

The socket is bound here, before uvicorn starts, so the port the page is reached on is known even
for ``--port 0`` (the Host and Origin checks compare it) and a port in use is one clear error.
Connections are bounded (``limit_concurrency``) and idle ones closed, as the webhook's are.
"""

from __future__ import annotations

import socket
import sys
import tempfile
import threading
import webbrowser
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from celmut.errors import ConfigurationError
from celmut.kube import certs
from celmut.playground.app import PlaygroundSettings, create_app, guarded
from celmut.playground.examples import default_root
from celmut.playground.guard import Origins, is_loopback
from celmut.playground.live import LiveCluster

MAX_CONNECTIONS = 64
KEEP_ALIVE_SECONDS = 30


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    open_browser: bool = False
    tls_cert: str | None = None
    tls_key: str | None = None
    self_signed: bool = False
    allowed_hosts: tuple[str, ...] = ()
    examples: str | None = None
    kubeconfig: str | None = None
    context: str | None = None


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; ConfigurationError naming the address when it cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as ex:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {ex.strerror or ex}") from None
    sock.listen(128)
    return sock


def tls_files(config: ServerConfig) -> tuple[str, str] | None:
    """The certificate and key to serve with, or None for plain HTTP (loopback only: command.check)."""
    if config.self_signed:
        directory = Path(tempfile.mkdtemp(prefix="celmut-playground-tls-"))
        hosts = sorted({config.host, "localhost", "127.0.0.1", *config.allowed_hosts} - {"0.0.0.0", "::"})
        material = certs.self_signed(directory, hosts)
        print(f"TLS: a self-signed certificate; its CA is {material.ca_file} (trust it, or accept the warning)")
        return str(material.cert_file), str(material.key_file)
    if config.tls_cert and config.tls_key:
        certs.check_tls_files(config.tls_cert, config.tls_key)
        return config.tls_cert, config.tls_key
    return None


def serve(config: ServerConfig) -> int:
    live = LiveCluster.connect(config.kubeconfig, config.context) if config.kubeconfig else None
    tls = tls_files(config)
    sock = bind(config.host, config.port)
    port = sock.getsockname()[1]
    # Off the loopback the machine's own names reach it too; on it, only localhost and the addresses.
    names = () if is_loopback(config.host) else (socket.gethostname(), socket.getfqdn())
    extra = (*config.allowed_hosts, *names)
    origins = Origins.of(config.host, port, tls=tls is not None, extra=extra)
    root = Path(config.examples) if config.examples else default_root()
    settings = PlaygroundSettings(examples_root=root, live=live)
    app = guarded(create_app(settings), origins)
    shown_host = "127.0.0.1" if config.host in ("0.0.0.0", "::") else config.host
    url = f"{origins.scheme}://{'[' + shown_host + ']' if ':' in shown_host else shown_host}:{port}/"
    uvicorn_config = uvicorn.Config(
        app,
        log_level="warning",
        limit_concurrency=MAX_CONNECTIONS,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        ssl_certfile=tls[0] if tls else None,
        ssl_keyfile=tls[1] if tls else None,
        server_header=False,
    )
    server = uvicorn.Server(uvicorn_config)
    if live is not None:
        print(f"celmut playground: connected to context {live.connection.context} ({live.connection.server}), "
              "read-only", flush=True)  # fmt: skip
    said = "nothing is written to the cluster" if live is not None else "nothing leaves this machine"
    print(f"celmut playground: {url}  (Ctrl+C stops it; {said})", flush=True)
    if config.open_browser:
        threading.Thread(target=_open_when_started, args=(server, url), daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    sys.stdout.flush()
    return 0


def _open_when_started(server: uvicorn.Server, url: str) -> None:
    for _ in range(200):
        if server.started:
            webbrowser.open(url)
            return
        threading.Event().wait(0.05)
