"""A request body checked against Google's own SDK types (``google-genai``), which forbid unknown
fields: what oma sends is what the SDK itself could send, field for field."""

from __future__ import annotations

import json
from typing import Any

#: The ``generateContent`` body fields and the SDK type each one is read as.
_FIELDS = {
    "systemInstruction": "Content",
    "toolConfig": "ToolConfig",
    "generationConfig": "GenerationConfig",
}


def assert_google_genai_takes(body: dict[str, Any]) -> None:
    """Validate every field of ``body`` as its ``google.genai.types`` model, from JSON (the
    wire's form: base64 strings for bytes, camelCase names); raises on any unknown field."""
    from google.genai import types

    known = {"contents", "tools", "safetySettings", "cachedContent", *_FIELDS}
    assert set(body) <= known, sorted(set(body) - known)
    for content in body["contents"]:
        types.Content.model_validate_json(json.dumps(content))
    for tool in body.get("tools", ()):
        types.Tool.model_validate_json(json.dumps(tool))
    for name, type_name in _FIELDS.items():
        if name in body:
            getattr(types, type_name).model_validate_json(json.dumps(body[name]))
