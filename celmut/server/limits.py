"""The webhook's connection limits (a light module: ``serve --help`` shows the defaults without
loading uvicorn). :mod:`celmut.server.connections` enforces them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 1000
    handshake_timeout: float = 5.0
    header_timeout: float = 5.0
    body_timeout: float = 10.0
    keep_alive_timeout: float = 30.0  # the API server keeps connections to a webhook open and reuses them

    def problem(self) -> str:
        """'' when usable, else which flag is not positive."""
        for flag, value in (
            ("--max-connections", self.max_connections),
            ("--tls-handshake-timeout", self.handshake_timeout),
            ("--header-timeout", self.header_timeout),
            ("--body-timeout", self.body_timeout),
            ("--keep-alive-timeout", self.keep_alive_timeout),
        ):
            if value <= 0:
                return f"{flag} must be positive"
        return ""
