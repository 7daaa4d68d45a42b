"""Property: whatever the prompt, an error message built from a service's echo of the request
(the toolkit's ``scrub`` with its ``request_secrets``) quotes neither the prompt (raw
or JSON-escaped, as an echoed body carries it) nor the key."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from oma_core import load_messages
from oma_core.toolkit import ProviderRequest, request_secrets, scrub

KEY = "sk-ant-oma-property-secret-0123456789"
# Secrets made of brackets or dots could be spelled by the markers scrubbing inserts.
prompts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="[].\\"),
    min_size=8,
    max_size=60,
)
noise = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


def request_for(prompt: str) -> ProviderRequest:
    messages = load_messages([{"role": "user", "content": [{"type": "text", "text": prompt}]}])
    return ProviderRequest(model="m", messages=messages, system_prompt="keep it short please")


@settings(max_examples=200, deadline=None)
@given(prompt=prompts, before=noise, after=noise, ascii_only=st.booleans())
def test_an_echoed_prompt_never_survives_scrubbing(
    prompt: str, before: str, after: str, ascii_only: bool
) -> None:
    body = json.dumps({"messages": [{"role": "user", "content": prompt}]}, ensure_ascii=ascii_only)
    echo = f"{before} could not process authorization: Bearer {KEY} {body} {after}"
    message = scrub(echo, request_secrets(request_for(prompt), KEY))
    assert prompt not in message
    assert json.dumps(prompt, ensure_ascii=ascii_only)[1:-1] not in message
    assert KEY not in message


@settings(max_examples=100, deadline=None)
@given(text=noise)
def test_scrubbing_keeps_messages_short(text: str) -> None:
    assert len(scrub(text * 50)) <= 303
