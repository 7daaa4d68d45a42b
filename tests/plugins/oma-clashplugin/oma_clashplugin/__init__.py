"""A dedicated plugin, written as a third party would: its own provider ``clashplugin``, and
``ollama`` (a name oma-openai offers as a preset), and the backend kind ``clashagent``.

Every provider answers with the name of this distribution, so a test sees which one won.
"""

from __future__ import annotations

from oma_core import BackendSpec, Capabilities, ProviderSpec, hookimpl
from oma_core.testing import ScriptedProvider

OWNER = "oma-clashplugin"


def _provider(name: str) -> ProviderSpec:
    return ProviderSpec(
        name=name,
        display_name=f"{name} ({OWNER})",
        factory=lambda settings: ScriptedProvider([f"from {OWNER}"]),
        capabilities=Capabilities.text_only(),
    )


@hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    return [_provider("clashplugin"), _provider("ollama")]


@hookimpl
def oma_register_backends() -> list[BackendSpec]:
    return [BackendSpec("clashagent", f"Clash agent ({OWNER})", factory=_no_backend)]


def _no_backend(options: object) -> object:
    raise NotImplementedError("the clash tests never run this backend")
