"""OpenMultiAgent shares one provider per settings between runs and closes it on aclose."""

from __future__ import annotations

import asyncio
from typing import Any

from oma_core import AgentConfig, Capabilities, OpenMultiAgent, PluginHost, ProviderSpec, hookimpl
from oma_core.testing import ScriptedProvider


class _Counting:
    """A plugin whose provider instances record how many were made and closed."""

    def __init__(self, *, shared: bool) -> None:
        self.shared = shared
        self.made: list[ScriptedProvider] = []

    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        def factory(settings: Any) -> ScriptedProvider:
            provider = ScriptedProvider(["ok"] * 10)
            self.made.append(provider)
            return provider

        return [
            ProviderSpec(
                "counting", "Counting", factory, Capabilities.everything(), shared=self.shared
            )
        ]


def _oma(plugin: _Counting, *, share: bool = True) -> OpenMultiAgent:
    host = PluginHost(load_entrypoints=False)
    host.register(plugin, name="counting")
    return OpenMultiAgent(plugins=host, share_providers=share)


PLAN = '{"tasks": [{"title": "a", "description": "do a", "assignee": "w"},'


PLAN += ' {"title": "b", "description": "do b", "assignee": "w", "depends_on": ["a"]}]}'


async def test_runs_share_one_provider_per_settings_and_aclose_closes_it() -> None:
    plugin = _Counting(shared=True)
    oma = _oma(plugin)
    config = AgentConfig("a", provider="counting")
    results = await asyncio.gather(*(oma.run_agent(config, "hi") for _ in range(3)))
    assert all(r.success for r in results)
    assert len(plugin.made) == 1
    assert not plugin.made[0].closed
    await oma.aclose()
    assert plugin.made[0].closed


async def test_different_settings_get_different_providers() -> None:
    plugin = _Counting(shared=True)
    async with _oma(plugin) as oma:
        await oma.run_agent(AgentConfig("a", provider="counting", base_url="http://a"), "hi")
        await oma.run_agent(AgentConfig("a", provider="counting", base_url="http://b"), "hi")
        await oma.run_agent(AgentConfig("a", provider="counting", api_key="k2"), "hi")
        assert len(plugin.made) == 3
    assert all(p.closed for p in plugin.made)


def test_a_shared_provider_is_never_reused_on_another_event_loop() -> None:
    plugin = _Counting(shared=True)
    oma = _oma(plugin)
    config = AgentConfig("a", provider="counting")
    for _ in range(2):
        assert asyncio.run(oma.run_agent(config, "hi")).success
    assert len(plugin.made) == 2


async def test_without_share_providers_every_run_makes_and_closes_its_own() -> None:
    plugin = _Counting(shared=True)
    oma = _oma(plugin, share=False)
    for _ in range(2):
        assert (await oma.run_agent(AgentConfig("a", provider="counting"), "hi")).success
    assert len(plugin.made) == 2
    assert all(p.closed for p in plugin.made)

    plugin = _Counting(shared=False)
    oma = _oma(plugin)
    for _ in range(2):
        assert (await oma.run_agent(AgentConfig("a", provider="counting"), "hi")).success
    assert len(plugin.made) == 2
    assert all(p.closed for p in plugin.made)


async def test_a_scripted_coordinator_from_options_plays_plan_then_answer() -> None:
    from oma_core import Team

    worker = AgentConfig("w", provider="scripted", provider_options={"responses": ["A", "B"]})
    lead = AgentConfig("lead", provider="scripted", provider_options={"responses": [PLAN, "done"]})
    result = await OpenMultiAgent().run_team(Team("t", [worker]), "goal", coordinator=lead)
    assert result.success, result.error
    assert [result.tasks["a"].output, result.tasks["b"].output] == ["A", "B"]
    assert result.output == "done"


async def test_one_scripted_agent_can_be_worker_and_default_coordinator() -> None:
    from oma_core import Team

    responses = [PLAN, "A", "B", "final answer"]
    worker = AgentConfig("w", provider="scripted", provider_options={"responses": responses})
    result = await OpenMultiAgent().run_team(Team("t", [worker]), "goal")
    assert result.success, result.error
    assert result.output == "final answer"


async def test_team_providers_are_made_once_per_settings_and_closed_at_the_end() -> None:
    from oma_core import TaskSpec, Team

    plugin = _Counting(shared=False)
    oma = _oma(plugin, share=False)
    team = Team("t", [AgentConfig("w", provider="counting")])
    tasks = [TaskSpec("a", "do a"), TaskSpec("b", "do b"), TaskSpec("c", "do c")]
    result = await oma.run_tasks(team, tasks)
    assert result.success
    assert len(plugin.made) == 1
    assert plugin.made[0].closed
