"""A reply cache as call middleware: the same request twice reaches the provider once.

Inert for everyone else: it caches only runs whose metadata has ``"cache": True``. Written
as a third party would, against ``oma_core.toolkit`` only.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Generator
from contextlib import aclosing
from typing import Any

from oma_core import Usage, hookimpl
from oma_core.toolkit import CallEvent, ModelCall, ResponseComplete, RunContext

#: request key -> the reply it got; ``HITS`` counts the calls answered from here.
CACHE: dict[str, Any] = {}
HITS: list[str] = []


def _key(call: ModelCall) -> str:
    from oma_core import dump_messages

    request = call.request
    return json.dumps(
        [call.provider, request.model, request.system_prompt, dump_messages(request.messages)],
        sort_keys=True,
    )


@hookimpl(wrapper=True)
def oma_model_call(call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
    events = yield
    if not run.metadata.get("cache") or call.kind != "model":
        return events
    key = _key(call)
    if key in CACHE:
        HITS.append(run.run_id)
        return _replay(events, CACHE[key])
    return _remember(events, key)


async def _replay(
    events: AsyncGenerator[CallEvent, None], response: Any
) -> AsyncGenerator[CallEvent, None]:
    await events.aclose()  # never iterated: nothing is sent
    yield ResponseComplete(type(response)(response.message, Usage(0, 0), response.stop_reason))


async def _remember(
    events: AsyncGenerator[CallEvent, None], key: str
) -> AsyncGenerator[CallEvent, None]:
    async with aclosing(events) as inner:
        async for event in inner:
            if isinstance(event, ResponseComplete):
                CACHE[key] = event.response
            yield event
