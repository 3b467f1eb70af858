"""The engine-to-event-loop channel a request waits on: a cancel (the client hung up) is never lost.

On Python 3.11 `asyncio.wait_for` drops a cancel that arrives in the loop step in which the awaited event
fires, and returns the result instead: the request's generation then ran to its end although its client
was gone (seen as `test_client_disconnect_aborts_a_non_streamed_request` failing about one run in six
under load). The orders below are made step by step, not raced, so each test is deterministic.
"""

from __future__ import annotations

import asyncio

import pytest

from gpuobs.serving.http.generation import EventChannel
from gpuobs.serving.interface import TokenEvent


def _token() -> TokenEvent:
    return TokenEvent("req-1", 7, False, None)


async def _waiting_get(channel: EventChannel) -> asyncio.Future[list[tuple[float, TokenEvent]]]:
    task = asyncio.ensure_future(channel.get(10.0))
    for _ in range(2):  # let the task reach its wait on the channel
        await asyncio.sleep(0)
    assert not task.done()
    return task


async def _cancel_after(steps: int) -> str:
    channel = EventChannel(asyncio.get_running_loop())
    task = await _waiting_get(channel)
    channel.put(_token())  # as the engine thread does: the wake-up is scheduled on the loop
    for _ in range(steps):
        await asyncio.sleep(0)
    assert not task.done()  # still waiting: the cancel must win
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return "cancelled"
    return "returned events"


@pytest.mark.parametrize("steps", [0, 1])
def test_a_cancel_in_the_step_the_token_arrives_cancels_the_wait(steps: int) -> None:
    """steps=1 is the lost-cancel order: the wake-up has set the event, the waiter has not run yet."""
    assert asyncio.run(_cancel_after(steps)) == "cancelled"


def test_get_returns_every_queued_event_and_times_out_when_none_come() -> None:
    async def scenario() -> tuple[int, bool]:
        channel = EventChannel(asyncio.get_running_loop())
        task = await _waiting_get(channel)
        channel.put(_token())
        channel.put(_token())
        got = await task
        try:
            await channel.get(0.01)
        except TimeoutError:
            return len(got), True
        return len(got), False

    assert asyncio.run(scenario()) == (2, True)
