"""The fake OpenAI service with the Responses API: ``POST /v1/responses`` beside Chat Completions.

Written from OpenAI's API reference for ``POST /v1/responses`` and its streaming events and
the installed ``openai`` SDK's ``ResponseCreateParams`` / ``ResponseStreamEvent`` types (read on
2026-12-06). A JSON reply is a ``response`` object; a streamed one is named server-sent events
(``event: response.created`` ... ``event: response.completed``, no ``[DONE]``), each with a
``sequence_number``: ``response.output_item.added`` / ``.done`` around each output item, with
``response.reasoning_summary_part.added`` / ``response.reasoning_summary_text.delta``,
``response.content_part.added`` / ``response.output_text.delta`` (or ``response.refusal.delta``)
and ``response.function_call_arguments.delta`` between. ``error`` events carry ``code`` and
``message``; a failed generation ends with ``response.failed``.

It checks what it receives as the service does and answers a 400 for what it refuses, among
them the rules of reasoning items sent back (``store: false``): an item needs its
``encrypted_content``, as issued; it must be followed by the item that followed it in the
reply ("... was provided without its required following item"), and an item that followed a
reasoning item may not come without it; every ``function_call`` needs its
``function_call_output``; ``temperature`` / ``top_p`` are refused by reasoning models (``o*``,
``gpt-5*`` except GPT-5.1 and later at effort ``none``); ``include`` of encrypted reasoning by a
model that does not reason (``gpt-4*``).
"""

from __future__ import annotations

import hashlib
import re
import time
from typing import Any

from fake_openai import (
    DATA_URL,
    IMAGE_DATA_URL,
    TOOL_NAME,
    WORDS,
    FakeChatCompletions,
    Refused,
    Reply,
    check_breakpoints,
    check_strict,
    is_base64,
)

from oma_core.testing.fake_server import RecordedRequest, Response, SSEEvent

__all__ = ["FakeResponses"]

_TOP_LEVEL = frozenset(
    {
        "model", "input", "instructions", "stream", "stream_options", "max_output_tokens",
        "temperature", "top_p", "tools", "tool_choice", "parallel_tool_calls", "text",
        "reasoning", "include", "store", "metadata", "user", "safety_identifier",
        "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "service_tier",
        "truncation", "top_logprobs", "max_tool_calls", "previous_response_id", "background",
        "conversation",
    }
)  # fmt: skip
_PARTS = ("input_text", "input_image", "input_file", "input_audio")
_REASONING_MODEL = re.compile(r"(?:o\d|gpt-5)")
_LATER_GPT5 = re.compile(r"gpt-5\.\d")
_PLAIN_MODEL = re.compile(r"gpt-4|gpt-3\.5")


class FakeResponses(FakeChatCompletions):
    """The fake service, speaking both APIs; error events in the Responses API's shape."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: Reasoning items issued: id -> (encrypted_content, id of the item that followed).
        self.issued: dict[str, tuple[str, str | None]] = {}
        #: Items that followed a reasoning item: id -> that reasoning item's id.
        self.followers: dict[str, str] = {}

    def error_event(self, error_type: str, message: str) -> SSEEvent:
        data = {"type": "error", "code": error_type, "message": message, "param": None,
                "sequence_number": 0}  # fmt: skip
        return SSEEvent(data, event="error")

    def error_final_event(self, message: str) -> SSEEvent:
        response = _response_object("resp_failed", "gpt-test", [], None, status="failed")
        response["error"] = {"code": "server_error", "message": message}
        data = {"type": "response.failed", "sequence_number": 0, "response": response}
        return SSEEvent(data, event="response.failed")

    def handle(self, request: RecordedRequest) -> Response:
        if request.path != "/v1/responses":
            return super().handle(request)
        if request.method != "POST":
            return self.error_response(404, f"Invalid URL ({request.method} {request.path})")
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return self.error_response(401, "Incorrect API key provided.")
        body = request.json
        try:
            if not isinstance(body, dict):
                raise Refused("We could not parse the JSON body of your request.")
            self._check_responses_body(body)
        except Refused as refused:
            return self.error_response(400, refused.message)
        with self._replies_lock:
            reply = self._replies.popleft() if self._replies else self.default_reply
            self._ids += 1
            ident = self._ids
        items = self._output_items(ident, reply)
        if body.get("stream"):
            return Response.sse(self._events(ident, body["model"], reply, items))
        return Response.json(_response_object(f"resp_{ident}", body["model"], items, reply))

    # -- checks

    def _check_responses_body(self, body: dict[str, Any]) -> None:
        for key in ("model", "input"):
            if key not in body:
                raise Refused(f"Missing required parameter: '{key}'.", key)
        if self.mode == "strict":
            for key in body:
                if key not in _TOP_LEVEL:
                    raise Refused(f"Unknown parameter: '{key}'.", key)
        model = body["model"]
        if not isinstance(model, str) or not model:
            raise Refused("Invalid type for 'model': expected a string.", "model")
        effort = (body.get("reasoning") or {}).get("effort")
        refuses_sampling = _REASONING_MODEL.match(model) and not (
            _LATER_GPT5.match(model) and effort in (None, "none")
        )
        for key in ("temperature", "top_p"):
            if key in body and refuses_sampling:
                raise Refused(f"Unsupported parameter: '{key}' is not supported with this model.")
        if "reasoning.encrypted_content" in (body.get("include") or ()) and _PLAIN_MODEL.match(
            model
        ):
            raise Refused("Encrypted content is not supported with this model.", "include")
        value = body.get("max_output_tokens")
        if value is not None and (not isinstance(value, int) or value < 16):
            raise Refused("Invalid 'max_output_tokens': integer below minimum value 16.")
        self._check_responses_tools(body.get("tools"))
        self._check_format(body.get("text"))
        items = body["input"]
        if isinstance(items, str):
            return
        if not isinstance(items, list) or not items:
            raise Refused("Invalid 'input': empty array.", "input")
        self._check_items(items, stored=body.get("store", True) is not False)
        contents = [
            (i.get("role"), i.get("output") if i.get("type") == "function_call_output" else
             i.get("content"))
            for i in items
            if isinstance(i, dict)
        ]  # fmt: skip
        check_breakpoints(contents, body.get("prompt_cache_options"))

    def _check_responses_tools(self, tools: Any) -> None:
        for i, tool in enumerate(tools or ()):
            if not isinstance(tool, dict) or tool.get("type") != "function":
                raise Refused(f"Invalid 'tools[{i}]': expected a function tool.")
            if not isinstance(tool.get("name"), str) or not TOOL_NAME.fullmatch(tool["name"]):
                raise Refused(f"Invalid 'tools[{i}].name'.")
            if tool.get("strict", True):  # strict unless told otherwise
                check_strict(tool.get("parameters") or {}, tool["name"], "root")

    def _check_format(self, text: Any) -> None:
        spec = (text or {}).get("format")
        if spec is None or spec.get("type") != "json_schema":
            return
        if not isinstance(spec.get("name"), str) or not TOOL_NAME.fullmatch(spec["name"]):
            raise Refused("Missing required parameter: 'text.format.name'.")
        schema = spec.get("schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise Refused("Invalid schema for text.format: the root must be an object.")
        if spec.get("strict"):
            check_strict(schema, spec["name"], "root")

    def _check_items(self, items: list[Any], *, stored: bool) -> None:
        calls: set[str] = set()
        answered: set[str] = set()
        previous: str | None = None  # the reasoning item just before, by id
        for i, item in enumerate(items):
            where = f"input[{i}]"
            if not isinstance(item, dict):
                raise Refused(f"Invalid type for '{where}': expected an object.", where)
            kind = item.get("type", "message")
            expected = self.issued.get(previous, (None, None))[1] if previous else None
            item_id = item.get("id")
            if expected is not None and item_id != expected:
                raise Refused(
                    f"Item '{previous}' of type 'reasoning' was provided without its required "
                    "following item.",
                    "input",
                )
            owner = self.followers.get(item_id) if isinstance(item_id, str) else None
            if owner is not None and owner != previous:
                raise Refused(
                    f"Item '{item_id}' of type '{kind}' was provided without its required "
                    f"'reasoning' item: '{owner}'.",
                    "input",
                )
            previous = None
            if kind == "reasoning":
                self._check_reasoning(item, where, stored)
                previous = item["id"]
            elif kind == "function_call":
                if not all(isinstance(item.get(k), str) for k in ("call_id", "name", "arguments")):
                    raise Refused(f"Invalid '{where}': a function_call needs call_id, name "
                                   "and arguments.", where)  # fmt: skip
                calls.add(item["call_id"])
            elif kind == "function_call_output":
                if item.get("call_id") not in calls:
                    raise Refused(
                        f"No tool call found for function call output with call_id "
                        f"{item.get('call_id')}.",
                        where,
                    )
                answered.add(item["call_id"])
                output = item.get("output")
                if not isinstance(output, str):
                    self._check_parts(output, f"{where}.output")
            elif kind == "message":
                self._check_message(item, where)
            else:
                raise Refused(f"Invalid value: '{kind}'.", f"{where}.type")
        if previous is not None and self.issued.get(previous, (None, None))[1] is not None:
            raise Refused(
                f"Item '{previous}' of type 'reasoning' was provided without its required "
                "following item.",
                "input",
            )
        missing = sorted(calls - answered)
        if missing:
            raise Refused(f"No tool output found for function call {missing[0]}.", "input")

    def _check_reasoning(self, item: dict[str, Any], where: str, stored: bool) -> None:
        item_id = item.get("id")
        if not isinstance(item_id, str) or not isinstance(item.get("summary"), list):
            raise Refused(f"Invalid '{where}': a reasoning item needs id and summary.", where)
        encrypted = item.get("encrypted_content")
        if encrypted is None:
            if not stored:
                raise Refused(
                    f"Item with id '{item_id}' not found. Items are not persisted when "
                    "`store` is set to false.",
                    where,
                )
            return
        issued = self.issued.get(item_id)
        if issued is None or issued[0] != encrypted:
            raise Refused(f"The encrypted content for item {item_id} could not be verified.", where)

    def _check_message(self, item: dict[str, Any], where: str) -> None:
        role, content = item.get("role"), item.get("content")
        if role not in ("user", "assistant", "system", "developer"):
            raise Refused(f"Invalid value for '{where}.role': {role!r}.", f"{where}.role")
        if isinstance(content, str):
            return
        if role == "assistant":
            if not isinstance(content, list) or not all(
                isinstance(p, dict) and p.get("type") in ("output_text", "refusal") for p in content
            ):
                raise Refused(f"Invalid '{where}.content': expected output_text parts.", where)
            if "id" in item and item.get("status") is None:
                raise Refused(f"Missing required parameter: '{where}.status'.", where)
            return
        self._check_parts(content, f"{where}.content")

    def _check_parts(self, parts: Any, where: str) -> None:
        if not isinstance(parts, list) or not parts:
            raise Refused(f"Invalid type for '{where}'.", where)
        for j, part in enumerate(parts):
            at = f"{where}[{j}]"
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "input_text":
                if not isinstance(part.get("text"), str):
                    raise Refused(f"Invalid '{at}.text'.", at)
            elif kind == "input_image":
                self._check_input_image(part, at)
            elif kind == "input_file":
                self._check_input_file(part, at)
            elif kind == "input_audio":
                self._check_audio(part.get("input_audio"), at)
            else:
                supported = ", ".join(f"'{k}'" for k in _PARTS)
                raise Refused(
                    f"Invalid value: '{kind}'. Supported values are: {supported}.", f"{at}.type"
                )

    def _check_input_image(self, part: dict[str, Any], at: str) -> None:
        if part.get("detail") not in ("auto", "low", "high", "original"):
            raise Refused(f"Invalid value for '{at}.detail'.", at)
        url = part.get("image_url")
        if not isinstance(url, str):
            raise Refused(f"Missing required parameter: '{at}.image_url'.", at)
        if url.startswith("data:"):
            match = IMAGE_DATA_URL.fullmatch(url)
            if match is None or not is_base64(match.group(2)):
                raise Refused("Invalid image data URL.", f"{at}.image_url")
        elif not url.startswith(("http://", "https://")):
            raise Refused("Invalid image URL.", f"{at}.image_url")

    def _check_input_file(self, part: dict[str, Any], at: str) -> None:
        if "file_url" in part:
            if not str(part["file_url"]).startswith(("http://", "https://")):
                raise Refused("Invalid file URL.", f"{at}.file_url")
            return
        data = part.get("file_data")
        if not isinstance(part.get("filename"), str) or not part["filename"]:
            raise Refused(f"Missing required parameter: '{at}.filename'.", at)
        match = DATA_URL.fullmatch(data) if isinstance(data, str) else None
        if match is None or not is_base64(match.group(2)):
            raise Refused("Invalid file data.", f"{at}.file_data")
        if match.group(1) != "application/pdf":
            raise Refused("Invalid file type: only PDF files are supported.", at)

    # -- replies

    def _output_items(self, ident: int, reply: Reply) -> list[dict[str, Any]]:
        """The reply's output items; reasoning items are recorded with what followed them."""
        items: list[dict[str, Any]] = []
        if reply.reasoning is not None:
            encrypted = "gAAAA" + hashlib.sha256(f"{ident}:{reply.reasoning}".encode()).hexdigest()
            summary = [{"type": "summary_text", "text": t} for t in reply.reasoning.split("\n\n")]
            items.append({"id": f"rs_{ident}", "type": "reasoning", "summary": summary,
                          "encrypted_content": encrypted})  # fmt: skip
        if reply.refusal is not None:
            content = [{"type": "refusal", "refusal": reply.refusal}]
            items.append(_message(f"msg_{ident}", content))
        elif reply.text is not None and (reply.text or not reply.tool_calls):
            content = [{"type": "output_text", "text": reply.text, "annotations": []}]
            items.append(_message(f"msg_{ident}", content))
        for n, (call_id, name, arguments) in enumerate(reply.tool_calls):
            items.append({"id": f"fc_{ident}_{n}", "type": "function_call", "status": "completed",
                          "call_id": call_id, "name": name, "arguments": arguments})  # fmt: skip
        if reply.reasoning is not None:
            following = items[1]["id"] if len(items) > 1 else None
            self.issued[items[0]["id"]] = (items[0]["encrypted_content"], following)
            if following is not None:
                self.followers[following] = items[0]["id"]
        return items

    def _events(
        self, ident: int, model: str, reply: Reply, items: list[dict[str, Any]]
    ) -> list[SSEEvent]:
        events: list[SSEEvent] = []

        def emit(kind: str, **fields: Any) -> None:
            data = {"type": kind, "sequence_number": len(events), **fields}
            events.append(SSEEvent(data, event=kind))

        started = _response_object(f"resp_{ident}", model, [], None, status="in_progress")
        emit("response.created", response=started)
        for index, item in enumerate(items):
            at = {"output_index": index}
            emit("response.output_item.added", item=_started(item), **at)
            self._item_events(emit, item, at)
            emit("response.output_item.done", item=item, **at)
        final = _response_object(f"resp_{ident}", model, items, reply)
        emit(f"response.{final['status']}", response=final)
        return events

    def _item_events(self, emit: Any, item: dict[str, Any], at: dict[str, int]) -> None:
        ref = {"item_id": item["id"], **at}
        if item["type"] == "reasoning":
            for n, part in enumerate(item["summary"]):
                emit("response.reasoning_summary_part.added", summary_index=n,
                     part={"type": "summary_text", "text": ""}, **ref)  # fmt: skip
                for word in WORDS.findall(part["text"]):
                    emit("response.reasoning_summary_text.delta", summary_index=n, delta=word,
                         **ref)  # fmt: skip
                emit("response.reasoning_summary_text.done", summary_index=n,
                     text=part["text"], **ref)  # fmt: skip
        elif item["type"] == "message":
            part = item["content"][0]
            empty = {**part, part["type"] if part["type"] == "refusal" else "text": ""}
            emit("response.content_part.added", content_index=0, part=empty, **ref)
            kind = "refusal" if part["type"] == "refusal" else "output_text"
            text = part["refusal"] if kind == "refusal" else part["text"]
            for piece in self._pieces(text):
                emit(f"response.{kind}.delta", content_index=0, delta=piece, logprobs=[], **ref)
            emit("response.content_part.done", content_index=0, part=part, **ref)
        else:
            arguments = item["arguments"]
            for start in range(0, len(arguments), 5):
                emit("response.function_call_arguments.delta",
                     delta=arguments[start : start + 5], **ref)  # fmt: skip
            emit("response.function_call_arguments.done", arguments=arguments, **ref)


def _message(item_id: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": item_id, "type": "message", "status": "completed", "role": "assistant",
            "content": content}  # fmt: skip


def _started(item: dict[str, Any]) -> dict[str, Any]:
    """An output item as ``response.output_item.added`` gives it: nothing generated yet."""
    if item["type"] == "reasoning":
        return {"id": item["id"], "type": "reasoning", "summary": []}
    if item["type"] == "message":
        return {**item, "status": "in_progress", "content": []}
    return {**item, "status": "in_progress", "arguments": ""}


def _response_object(
    ident: str, model: str, items: list[dict[str, Any]], reply: Reply | None, status: str = ""
) -> dict[str, Any]:
    incomplete = reply is not None and reply.finish_reason == "length"
    status = status or ("incomplete" if incomplete else "completed")
    response: dict[str, Any] = {
        "id": ident,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "model": model,
        "output": items,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": None if reply is None else _usage(reply),
    }
    return response


def _usage(reply: Reply) -> dict[str, Any]:
    return {
        "input_tokens": reply.prompt_tokens,
        "input_tokens_details": {
            "cached_tokens": reply.cached_tokens or 0,
            "cache_write_tokens": reply.cache_write_tokens or 0,
        },
        "output_tokens": reply.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens or 0},
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
