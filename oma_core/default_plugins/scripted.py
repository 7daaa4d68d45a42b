"""The built-in "scripted" provider: plays queued responses, for tests and demos.

``AgentConfig(provider="scripted", provider_options={"responses": [...]})`` builds an
``oma_core.testing.ScriptedProvider`` from that list; an item ``{"delay": s, "response": r}``
(exactly those two keys) is ``Delayed(s, r)``, so that a JSON file can ask for a slow answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..capabilities import Capabilities, ProviderSpec
from ..hookspecs import hookimpl

if TYPE_CHECKING:
    from ..providers import Provider, ProviderSettings

__all__ = ["oma_register_providers"]


def _make(settings: ProviderSettings) -> Provider:
    from ..testing.scripted import Delayed, ScriptedProvider

    return ScriptedProvider(
        [
            Delayed(item["delay"], item["response"])
            if isinstance(item, Mapping) and set(item) == {"delay", "response"}
            else item
            for item in settings.options.get("responses", ())
        ]
    )


@hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    return [
        ProviderSpec(
            name="scripted",
            display_name="Scripted",
            factory=_make,
            capabilities=Capabilities.everything(),
            description='Plays the responses in provider_options["responses"], in order.',
            provider_options=("responses",),
        )
    ]
