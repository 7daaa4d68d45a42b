"""The chain and observe hooks are called one plugin at a time, through pluggy, in pluggy's order.

pluggy has no chain and no isolated call, so ``PluginHost.hook_calls`` hands out one pluggy
hook caller per plugin, in the order pluggy keeps them (``get_hookimpls``, read from the end);
these tests hold that order equal to the order pluggy itself calls the implementations,
whatever the registrations, and the core's observers to coming from it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_core import hookimpl
from oma_core.errors import PluginError
from oma_core.plugins import PluginHost


def _named(name: str, *, tryfirst: bool = False, trylast: bool = False) -> object:
    class Plugin:
        @hookimpl(tryfirst=tryfirst, trylast=trylast)
        def oma_before_run(self, ctx: Any) -> str:
            return name

        @hookimpl(tryfirst=tryfirst, trylast=trylast)
        def oma_progress(self, event: list[str]) -> None:
            event.append(name)

    return Plugin()


_STEP = st.tuples(st.sampled_from(["plain", "tryfirst", "trylast"]), st.booleans())


@settings(max_examples=60, deadline=None)
@given(st.lists(_STEP, min_size=1, max_size=7))
def test_hook_calls_come_in_the_order_pluggy_calls_them(steps: list[tuple[str, bool]]) -> None:
    host = PluginHost(load_entrypoints=False)
    for index, (priority, drop_earlier) in enumerate(steps):
        name = f"p{index}"
        plugin = _named(name, tryfirst=priority == "tryfirst", trylast=priority == "trylast")
        host.register(plugin, name=name)
        if drop_earlier and index >= 2:  # unregistering changes pluggy's lists too
            host.unregister(name=f"p{index - 2}")
            host.register(_named(f"p{index - 2}"), name=f"p{index - 2}")
    order = [call.plugin for call in host.hook_calls("oma_before_run")]
    assert order == host.pm.hook.oma_before_run(ctx=None)
    seen: list[str] = []
    host.pm.hook.oma_progress(event=seen)
    assert [call.plugin for call in host.hook_calls("oma_progress")] == seen


def test_each_hook_call_reaches_only_its_own_plugin_through_pluggy() -> None:
    host = PluginHost(load_entrypoints=False)
    host.register(_named("a"), name="a")
    host.register(_named("b"), name="b")
    seen: list[str] = []
    for call in host.hook_calls("oma_progress"):
        call(seen)
        assert seen[-1] == call.plugin
    assert seen == ["b", "a"]


def test_a_plugin_implementing_a_chain_hook_twice_is_refused() -> None:
    class Twice:
        @hookimpl
        def oma_before_run(self, ctx: Any) -> None:
            return None

        @hookimpl(specname="oma_before_run")
        def also_before_run(self, ctx: Any) -> None:
            return None

    host = PluginHost(load_entrypoints=False)
    with pytest.raises(PluginError, match="oma_before_run is implemented twice"):
        host.register(Twice(), name="twice")
    assert not host.pm.has_plugin("twice")


def test_a_hook_call_of_a_plugin_that_returns_none_returns_none() -> None:
    class Quiet:
        @hookimpl
        def oma_before_run(self, ctx: Any) -> None:
            return None

    host = PluginHost(load_entrypoints=False)
    host.register(Quiet(), name="quiet")
    (call,) = host.hook_calls("oma_before_run")
    assert call(None) is None


def test_the_facade_hands_out_the_observers_in_pluggys_order() -> None:
    host = PluginHost(load_entrypoints=False)
    host.register(_named("a", trylast=True), name="a")
    host.register(_named("b"), name="b")
    host.register(_named("c", tryfirst=True), name="c")
    host.register(_named("d"), name="d")
    seen: list[str] = []
    for call in host.hooks.progress():
        call(seen)
    assert seen == ["c", "d", "b", "a"]
    expected: list[str] = []
    host.pm.hook.oma_progress(event=expected)
    assert seen == expected


def test_with_call_monitoring_on_each_hook_call_is_seen() -> None:
    host = PluginHost(load_entrypoints=False)
    host.register(_named("a"), name="a")
    assert len(host.hook_calls("oma_progress")) == 1  # kept before the monitoring starts
    seen: list[str] = []
    undo = host.pm.add_hookcall_monitoring(
        lambda name, impls, kwargs: seen.append(name), lambda *args: None
    )
    try:
        for call in host.hook_calls("oma_progress"):
            call([])
    finally:
        undo()
    assert seen == ["oma_progress"]
