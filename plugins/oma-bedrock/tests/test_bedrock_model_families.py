"""Claude on Bedrock follows the one table of Claude's families (``oma_core.model_families``):
every family's model ids, written Bedrock's way (a geography or ARN, the vendor, a date and a
version), get that family's rules, less what Converse has no field for (``top_k``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from oma_bedrock.thinking import MODEL_RULES, rules_for

from oma_core.model_families import CLAUDE_FAMILIES, ClaudeFamily, claude_family

PREFIXES = st.sampled_from(
    ["", "us.", "global.", "arn:aws:bedrock:us-east-1::inference-profile/eu."]
)
STEMS = st.sampled_from([(f, stem) for f in CLAUDE_FAMILIES for stem in f.stems])


@given(PREFIXES, STEMS, st.sampled_from(["-20250929-v1:0", "-v1:0", "-preview"]))
def test_each_family_s_ids_get_its_rules_without_top_k(
    prefix: str, family_stem: tuple[ClaudeFamily, str], suffix: str
) -> None:
    family, stem = family_stem
    model = f"{prefix}anthropic.{stem}{suffix}"
    assert claude_family(model, "*anthropic.") is family
    rules = rules_for(model)
    assert rules is MODEL_RULES[CLAUDE_FAMILIES.index(family)]
    assert (rules.thinking, rules.budget) == (family.thinking, family.budget)
    assert rules.refuses == family.refuses - {"top_k"}
    assert rules.refuses_while_thinking == family.refuses_while_thinking - {"top_k"}


def test_a_model_that_is_not_claude_has_no_family() -> None:
    for model in ("amazon.nova-pro-v1:0", "meta.llama3-3-70b-instruct-v1:0", "claude-3-7-sonnet"):
        assert claude_family(model, "*anthropic.") is None and rules_for(model) is None
