"""The request body's deadline (``celmut.server.mutate._read_body_within``): what ``asyncio.timeout``
does for the body read, by one timer; the 408 a client sees is in tests/server/test_connections.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from celmut.server.mutate import _read_body_within


def _receiver(chunks: list[bytes], *, then_wait: bool = False) -> Any:
    """An ASGI ``receive`` sending ``chunks`` (the last one ends the body unless ``then_wait``)."""
    pending = list(chunks)

    async def receive() -> dict[str, Any]:
        if not pending:
            await asyncio.Event().wait()  # a client that stopped sending
        chunk = pending.pop(0)
        await asyncio.sleep(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(pending) or then_wait}

    return receive


def test_a_body_sent_in_time_is_read_whole() -> None:
    body = asyncio.run(_read_body_within(_receiver([b"{", b"}"]), 100, 5.0))
    assert body == b"{}"


def test_a_body_not_complete_in_time_is_a_timeout_and_the_task_can_still_answer() -> None:
    async def admission() -> str:
        try:
            await _read_body_within(_receiver([b"{"], then_wait=True), 100, 0.05)
        except TimeoutError:
            await asyncio.sleep(0)  # answering the 408 awaits: the task must not still be cancelled
            return f"timed out, cancelling={asyncio.current_task().cancelling()}"  # type: ignore[union-attr]
        return "read"

    assert asyncio.run(admission()) == "timed out, cancelling=0"


def test_a_cancellation_from_elsewhere_is_not_taken_for_the_deadline() -> None:
    async def shutdown_during_read() -> None:
        reading = asyncio.create_task(_read_body_within(_receiver([b"{"], then_wait=True), 100, 30.0))
        await asyncio.sleep(0.01)
        reading.cancel()  # the server shutting down
        await reading

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(shutdown_during_read())
