"""``OpenMultiAgent`` shares one SDK client per event loop and settings by default: runs reuse
its connections; different keys, base URLs or options never share a pool; nothing stays open
after ``asyncio.run`` returns, after ``aclose``, or once the ``OpenMultiAgent`` is dropped."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from fake_openai import API_KEY, FakeChatCompletions
from oma_openai import make_provider, preset

from oma_core import AgentConfig, OpenMultiAgent, PluginHost, ProviderSpec, hookimpl
from oma_core.toolkit import ProviderSettings


def _config(server: FakeChatCompletions, *, api_key: str = API_KEY, **options: Any) -> AgentConfig:
    return AgentConfig(
        "a",
        provider="openai",
        model="gpt-test",
        base_url=server.base_url,
        api_key=api_key,
        provider_options=options,
    )


def _keys_by_connection(server: FakeChatCompletions) -> dict[str, set[int]]:
    seen: dict[str, set[int]] = {}
    for request in server.requests:
        seen.setdefault(request.headers["authorization"], set()).add(request.connection)
    return seen


class TestSharedByDefault:
    def test_runs_reuse_one_connection_and_none_is_open_after_asyncio_run(
        self, server: FakeChatCompletions
    ) -> None:
        async def main() -> list[bool]:
            oma = OpenMultiAgent()  # never closed: the event loop's end closes its providers
            results = []
            for _ in range(5):
                results.append((await oma.run_agent(_config(server), "hi")).success)
            return results

        assert asyncio.run(main()) == [True] * 5
        assert server.total_connections == 1  # one client, one kept-alive connection
        assert server.wait_idle(timeout=30), "a connection was left open after asyncio.run returned"

    def test_concurrent_runs_share_one_pool_closed_with_the_loop(
        self, server: FakeChatCompletions
    ) -> None:
        async def main() -> None:
            oma = OpenMultiAgent()
            config = _config(server)
            results = await asyncio.gather(*(oma.run_agent(config, "hi") for _ in range(20)))
            assert all(r.success for r in results)
            again = await asyncio.gather(*(oma.run_agent(config, "hi") for _ in range(20)))
            assert all(r.success for r in again)

        asyncio.run(main())
        assert server.total_connections <= 20  # the second wave reused the first's
        assert server.wait_idle(timeout=30)

    def test_each_asyncio_run_gets_its_own_client(self, server: FakeChatCompletions) -> None:
        oma = OpenMultiAgent()
        for _ in range(2):
            assert asyncio.run(oma.run_agent(_config(server), "hi")).success
            assert server.wait_idle(timeout=30)
        assert server.total_connections == 2

    async def test_aclose_closes_the_shared_connections_at_once(
        self, server: FakeChatCompletions
    ) -> None:
        async with OpenMultiAgent() as oma:
            assert (await oma.run_agent(_config(server), "hi")).success
            assert server.open_connections == 1
        assert await server.async_wait_idle(timeout=30)
        # still usable: a later run makes a new client
        assert (await oma.run_agent(_config(server), "hi")).success
        await oma.aclose()
        assert await server.async_wait_idle(timeout=30)

    async def test_a_dropped_orchestrator_has_its_clients_closed_on_the_loop(
        self, server: FakeChatCompletions
    ) -> None:
        oma = OpenMultiAgent()
        assert (await oma.run_agent(_config(server), "hi")).success
        assert server.open_connections == 1
        del oma
        gc.collect()
        assert await server.async_wait_idle(timeout=30), (
            "a dropped OpenMultiAgent left its client open"
        )


class TestIsolation:
    async def test_two_keys_never_share_a_connection(self, server: FakeChatCompletions) -> None:
        async with OpenMultiAgent() as oma:
            for _ in range(2):
                await oma.run_agent(_config(server), "hi")
                await oma.run_agent(_config(server, api_key="another-key"), "hi")
        seen = _keys_by_connection(server)
        assert len(seen[f"Bearer {API_KEY}"]) == 1  # reused across its runs
        assert len(seen["Bearer another-key"]) == 1
        assert not seen[f"Bearer {API_KEY}"] & seen["Bearer another-key"]
        assert await server.async_wait_idle(timeout=30)

    async def test_different_options_never_share_a_connection(
        self, server: FakeChatCompletions
    ) -> None:
        async with OpenMultiAgent() as oma:
            for _ in range(2):
                await oma.run_agent(_config(server, headers={"x-team": "a"}), "hi")
                await oma.run_agent(_config(server, headers={"x-team": "b"}), "hi")
        by_team: dict[str, set[int]] = {}
        for request in server.requests:
            by_team.setdefault(request.headers["x-team"], set()).add(request.connection)
        assert len(by_team["a"]) == 1 and len(by_team["b"]) == 1
        assert not by_team["a"] & by_team["b"]

    async def test_share_providers_false_makes_and_closes_a_client_per_run(
        self, server: FakeChatCompletions
    ) -> None:
        oma = OpenMultiAgent(share_providers=False)
        for _ in range(3):
            assert (await oma.run_agent(_config(server), "hi")).success
            assert await server.async_wait_idle(timeout=30)
        assert server.total_connections == 3

    async def test_an_unshareable_spec_gets_a_fresh_provider_per_run(
        self, server: FakeChatCompletions
    ) -> None:
        made: list[Any] = []

        class Unshared:
            @hookimpl
            def oma_register_providers(self) -> list[ProviderSpec]:
                def factory(settings: ProviderSettings) -> Any:
                    made.append(make_provider(preset("openai"), settings))
                    return made[-1]

                spec = preset("openai").capabilities
                return [ProviderSpec("unshared", "Unshared", factory, spec, shared=False)]

        host = PluginHost(load_entrypoints=False)
        host.register(Unshared(), name="unshared")
        oma = OpenMultiAgent(plugins=host)
        config = AgentConfig(
            "a", provider="unshared", model="gpt-test", base_url=server.base_url, api_key=API_KEY
        )
        for _ in range(3):
            assert (await oma.run_agent(config, "hi")).success
            assert await server.async_wait_idle(timeout=30)
        assert len(made) == 3 and len({id(p) for p in made}) == 3
        assert server.total_connections == 3
