"""The core's provider conformance suite against the fake Gemini API."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, ClassVar

from fake_gemini import ISSUED, FakeGemini, Reply

from oma_core import image_url, video_url
from oma_core.testing import FakeServer, NeutralRequest, RecordedRequest, ScriptedReply
from oma_core.testing.conformance import ProviderConformance, Sample


def expected_on_wire(sample: Sample) -> Any:
    """The Gemini part for the sample's block."""
    block = dict(sample.block)
    kind = sample.block_type
    if kind == "text":
        return {"text": block["text"]}
    if kind in ("image", "video", "file", "document", "audio"):
        # no place for a document's filename; MP3 goes under Gemini's name, audio/mp3
        source = block["source"]
        mime = "audio/mp3" if source["media_type"] == "audio/mpeg" else source["media_type"]
        if source["type"] == "base64":
            return {"inlineData": {"mimeType": mime, "data": source["data"]}}
        return {"fileData": {"mimeType": mime, "fileUri": source["url"]}}
    if kind == "tool_use":
        return {"functionCall": {"id": block["id"], "name": block["name"], "args": block["input"]}}
    if kind == "tool_result":
        response = {"result": block["content"]}
        return {
            "functionResponse": {"id": block["tool_use_id"], "name": "lookup", "response": response}
        }
    if kind == "reasoning":
        return {"text": block["text"], "thought": True, "thoughtSignature": block["signature"]}
    raise AssertionError(f"no expectation for {sample.id}")


def _read_media(mime: str, source: dict[str, Any]) -> dict[str, Any]:
    kind = mime.partition("/")[0]
    assert kind in ("image", "video"), f"the reader does not know {mime} parts"
    return {"type": kind, "source": source}


def _read_part(part: dict[str, Any]) -> Any:
    """A Gemini ``Part`` as the core's block (from the API reference)."""
    if part.get("thought"):
        return {"type": "reasoning", "text": part["text"]}
    if "text" in part:
        return {"type": "text", "text": part["text"]}
    if "inlineData" in part:
        data = part["inlineData"]
        source = {"type": "base64", "media_type": data["mimeType"], "data": data["data"]}
        return _read_media(data["mimeType"], source)
    if "fileData" in part:
        uri = part["fileData"]["fileUri"]
        return (
            image_url(uri)
            if part["fileData"].get("mimeType", "").startswith("image/")
            else (video_url(uri))
        )
    if "functionCall" in part:
        call = part["functionCall"]
        return {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["args"]}
    if "functionResponse" in part:
        response = part["functionResponse"]["response"]
        is_error = "error" in response
        return {
            "type": "tool_result",
            "tool_use_id": part["functionResponse"]["id"],
            "content": response["error" if is_error else "result"],
            "is_error": is_error,
        }
    raise AssertionError(f"the reader does not know the part {sorted(part)}")


def read_gemini_body(body: dict[str, Any]) -> NeutralRequest:
    """What ``generateContent`` understands from ``body`` (Gemini's API reference): the
    output schema is ``generationConfig.responseJsonSchema`` (with a JSON
    ``responseMimeType``: the schema binds only JSON replies)."""
    system = body.get("systemInstruction")
    declarations = [d for t in body.get("tools") or () for d in t.get("functionDeclarations", ())]
    calling = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
    mode, allowed = calling.get("mode"), calling.get("allowedFunctionNames") or []
    choice = {"AUTO": "auto", "NONE": "none", "ANY": "required"}.get(mode) if mode else None
    if mode == "ANY" and len(allowed) == 1:
        choice = allowed[0]
    config = body.get("generationConfig") or {}
    return NeutralRequest(
        messages=[
            {
                "role": "assistant" if c["role"] == "model" else "user",
                "content": [_read_part(p) for p in c["parts"] if not p.get("thought")],
            }
            for c in body["contents"]
        ],
        system_prompt="".join(p["text"] for p in system["parts"]) if system else None,
        tools=[
            {
                "name": d["name"],
                "description": d.get("description", ""),
                "input_schema": d.get("parametersJsonSchema", d.get("parameters", {})),
            }
            for d in declarations
        ],
        tool_choice=choice,
        temperature=config.get("temperature"),
        max_tokens=config.get("maxOutputTokens"),
        stop=config.get("stopSequences"),
        output_schema=config.get("responseJsonSchema")
        if config.get("responseMimeType") == "application/json"
        else None,
    )


_FINISH = {"end_turn": "STOP", "max_tokens": "MAX_TOKENS", "tool_use": "STOP"}


class TestGeminiConformance(ProviderConformance):
    provider_name = "gemini"
    output_modes = frozenset({"native", "tool", "prompted"})
    transient_stream_error = "UNAVAILABLE"
    cache_usage = frozenset({"read"})  # usageMetadata.cachedContentTokenCount (implicit caching)
    tool_call_ids = "sometimes"  # functionCall.id is optional
    tool_choices: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "auto": {"toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}},
        "none": {"toolConfig": {"functionCallingConfig": {"mode": "NONE"}}},
        "required": {"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}},
        "lookup": {
            "toolConfig": {
                "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}
            }
        },
    }

    def base_url(self, server: FakeServer) -> str:
        assert isinstance(server, FakeGemini)
        return server.base_url

    def script_text(self, server: Any, text: str) -> None:
        server.reply(Reply(text=text))

    def script_tool_call(self, server: Any, call_id: str, name: str, arguments: Any) -> None:
        server.reply(Reply(text="", calls=((call_id, name, dict(arguments)),)))

    def script_reply(self, server: Any, reply: ScriptedReply) -> None:
        calls = tuple((c.id, c.name, dict(c.arguments)) for c in reply.tool_calls)
        server.reply(
            Reply(
                text=reply.text,
                calls=calls,
                finish_reason=_FINISH[reply.stop_reason],
                prompt_tokens=reply.usage.input_tokens,
                output_tokens=reply.usage.output_tokens,
                cached_tokens=reply.usage.cache_read_tokens,
            )
        )

    def script_reasoning(
        self,
        server: Any,
        reasoning: str,
        *,
        text: str = "",
        call: tuple[str, str, Mapping[str, Any]] | None = None,
    ) -> None:
        """A signed thought summary, then the text or the function call; the fake verifies
        the signature when it comes back. (A signature on the function call, as Gemini 3
        puts it, is held by ``test_gemini_thinking``.)"""
        calls = () if call is None else ((call[0], call[1], dict(call[2])),)
        signature = ISSUED + secrets.token_urlsafe(24)
        server.reply(Reply(text=text, calls=calls, thoughts=reasoning, signature=signature,
                           signed_thought=True))  # fmt: skip

    def read_request(self, body: Any) -> NeutralRequest:
        return read_gemini_body(body)

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        message, _, _ = sample.locator
        parts = request.json["contents"][message]["parts"]
        assert expected_on_wire(sample) in parts, (sample.id, parts)
        role = "model" if sample.where == "assistant" else "user"
        assert request.json["contents"][message]["role"] == role
