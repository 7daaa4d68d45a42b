"""Presets of a generic wire, written as a third party would (like oma-openai's presets):
``clashplugin`` and ``ollama`` are names of services it can also speak to, and the backend
kind ``clashagent``. None is named for this distribution.

Every provider answers with the name of this distribution, so a test sees which one won.
"""

from __future__ import annotations

from oma_core import BackendSpec, Capabilities, ProviderSpec, hookimpl
from oma_core.testing import ScriptedProvider

OWNER = "oma-clashpresets"


def _preset(name: str) -> ProviderSpec:
    return ProviderSpec(
        name=name,
        display_name=f"{name} ({OWNER})",
        factory=lambda settings: ScriptedProvider([f"from {OWNER}"]),
        capabilities=Capabilities.text_only(),
    )


@hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    return [_preset("clashplugin"), _preset("ollama")]


@hookimpl
def oma_register_backends() -> list[BackendSpec]:
    return [BackendSpec("clashagent", f"Clash agent ({OWNER})", factory=_no_backend)]


def _no_backend(options: object) -> object:
    raise NotImplementedError("the clash tests never run this backend")
