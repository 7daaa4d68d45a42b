"""The public names: what `oma_core` and `oma_core.testing` export."""

from __future__ import annotations


def test_testing_names_are_importable() -> None:
    from oma_core.testing import Delayed, ScriptedProvider

    assert callable(ScriptedProvider) and callable(Delayed)
