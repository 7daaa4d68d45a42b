"""One call through oma-litellm while LiteLLM's own cached client (the one its routes and
callbacks use when handed no client) has opened its aiohttp session, then the agent closed
and the process ended: run by ``test_litellm_exit.py``, which reads its output."""

from __future__ import annotations

import asyncio
import gc
import sys

from fake_chat_completions import FakeChatCompletions

from oma_core import Agent, AgentConfig


async def main() -> None:
    with FakeChatCompletions() as server:
        server.reply_text("hello there")
        config = AgentConfig(
            name="exit", provider="litellm", model="openai/gpt-fake",
            base_url=server.base_url, api_key="test-key", max_retries=0,
        )  # fmt: skip
        async with Agent(config) as agent:
            result = await agent.run("hi")
            assert result.success, result.status.error
            from litellm.llms.custom_httpx.http_handler import get_async_httpx_client

            cached = get_async_httpx_client(llm_provider="anthropic")  # LiteLLM's cache
            server.reply_text("from the cached client")
            body = {"model": "gpt-fake", "messages": [{"role": "user", "content": "hi"}]}
            headers = {"authorization": "Bearer test-key"}
            url = f"{server.base_url}/chat/completions"
            reply = await cached.post(url, json=body, headers=headers)
            print("cached client answered", reply.status_code, file=sys.stderr)
        print("closed", flush=True)
        print("aiohttp sessions left open:", len(_open_sessions()), flush=True)


def _open_sessions() -> list[object]:
    """Every aiohttp session of the process not closed yet."""
    import aiohttp

    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, aiohttp.ClientSession) and not o.closed]


asyncio.run(main())
