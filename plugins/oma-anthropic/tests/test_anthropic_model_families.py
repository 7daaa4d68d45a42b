"""Claude on the Messages API follows the one table of Claude's families
(``oma_core.model_families``): every family's model ids, bare or dated, get that family's
rules, every sampling setting included."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from oma_anthropic.thinking import MODEL_RULES, rules_for

from oma_core.model_families import CLAUDE_FAMILIES, ClaudeFamily, claude_family

STEMS = st.sampled_from([(f, stem) for f in CLAUDE_FAMILIES for stem in f.stems])


@given(STEMS, st.sampled_from(["", "-20250929", "-latest", "-preview"]))
def test_each_family_s_ids_get_its_rules(
    family_stem: tuple[ClaudeFamily, str], suffix: str
) -> None:
    family, stem = family_stem
    model = stem + suffix
    assert claude_family(model) is family
    rules = rules_for(model)
    assert rules is MODEL_RULES[CLAUDE_FAMILIES.index(family)]
    assert (rules.thinking, rules.budget, rules.exclusive) == (
        family.thinking,
        family.budget,
        family.exclusive,
    )
    assert (rules.refuses, rules.refuses_while_thinking) == (
        family.refuses,
        family.refuses_while_thinking,
    )


def test_the_families_are_newest_first_and_only_the_optional_budget_ones_take_disabled() -> None:
    assert claude_family("claude-opus-4-7") is CLAUDE_FAMILIES[1]
    assert claude_family("claude-3-7-sonnet-latest") is CLAUDE_FAMILIES[5]  # before "claude-3"
    assert [f.takes_disabled for f in CLAUDE_FAMILIES] == [
        False,
        False,
        True,
        True,
        True,
        True,
        False,
    ]
    assert claude_family("gpt-5") is None and claude_family("anthropic.claude-opus-4-7") is None
