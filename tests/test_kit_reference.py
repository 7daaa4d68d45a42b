"""The conformance kit passes a correct provider: the reference Kitchat provider, unsabotaged
(``tests/test_kit_catches_sabotage.py`` shows it fails each sabotaged one)."""

from __future__ import annotations

from kit_reference import KitchatConformance


class TestKitchatConformance(KitchatConformance):
    """Every check of the kit, on the reference provider."""
