"""The hook specifications: names, markers, documentation and how results combine."""

from __future__ import annotations

import inspect

import pluggy

import oma_core
from oma_core import hookimpl, hookspecs
from oma_core.plugins import PluginHost

SPECS = {
    name: function
    for name, function in vars(hookspecs).items()
    if inspect.isfunction(function) and function.__module__ == hookspecs.__name__
}


def test_the_hooks_are_the_six_of_the_contract_and_the_three_middleware_hooks() -> None:
    assert set(SPECS) == {
        "oma_run",
        "oma_register_providers",
        "oma_register_backends",
        "oma_register_executors",
        "oma_register_toolsets",
        "oma_register_stores",
        "oma_before_run",
        "oma_progress",
        "oma_register_scorers",
        "oma_evaluation_result",
        "oma_model_call",
        "oma_tool_call",
    }


def test_every_hook_is_a_spec_of_the_oma_project_with_a_full_docstring() -> None:
    for name, function in SPECS.items():
        assert hasattr(function, "oma_spec"), name
        doc = inspect.getdoc(function) or ""
        assert len(doc.splitlines()) >= 5, name
        assert ":param" in doc or ":returns:" in doc, name


def test_hookimpl_lives_beside_the_specs_and_oma_core_reexports_it() -> None:
    assert oma_core.hookimpl is hookspecs.hookimpl


def test_hookimpl_and_hookspec_share_the_project_name() -> None:
    assert hookspecs.hookspec.project_name == "oma"
    assert oma_core.hookimpl.project_name == "oma"
    assert isinstance(oma_core.hookimpl, pluggy.HookimplMarker)


def test_hook_arguments_are_the_documented_ones() -> None:
    arguments = {name: list(inspect.signature(f).parameters) for name, f in SPECS.items()}
    assert arguments == {
        "oma_register_providers": [],
        "oma_register_backends": [],
        "oma_register_executors": [],
        "oma_register_toolsets": [],
        "oma_register_scorers": [],
        "oma_register_stores": [],
        "oma_before_run": ["ctx"],
        "oma_progress": ["event"],
        "oma_evaluation_result": ["result"],
        "oma_run": ["run"],
        "oma_model_call": ["call", "run"],
        "oma_tool_call": ["call", "run"],
    }


def test_collect_hooks_return_one_list_per_plugin() -> None:
    class Plugin:
        @hookimpl
        def oma_register_scorers(self) -> list[object]:
            return [len]

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="scorers")
    assert host.hook.oma_register_scorers() == [[len]]
    assert len(host.hook.oma_register_providers()) == 2  # echo and scripted
