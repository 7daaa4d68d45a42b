"""The reference kit once per sabotage (run by ``tests/test_kit_catches_sabotage.py`` in a
subprocess; not collected by the suite itself)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kit_reference import SABOTAGES, KitchatConformance


class TestSabotagedKitchat(KitchatConformance):
    @pytest.fixture(autouse=True, params=SABOTAGES)
    def _sabotaged(
        self, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
    ) -> Iterator[None]:
        monkeypatch.setenv("OMA_KIT_SABOTAGE", request.param)
        yield
