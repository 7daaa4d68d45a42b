"""A request body checked against botocore's own ``bedrock-runtime`` service model: what oma
sends is what boto3 itself would accept, member for member."""

from __future__ import annotations

from typing import Any

from botocore.session import get_session
from botocore.validate import ParamValidator

MODEL = "anthropic.claude-fake-v1:0"


def assert_botocore_takes(body: dict[str, Any], operation: str) -> None:
    """``body`` (plus the model id, which travels in the URL) is valid input of
    ``operation`` by botocore's service model: known members, types, required fields, enums,
    lengths."""
    model = get_session().get_service_model("bedrock-runtime")
    shape: Any = model.operation_model(operation).input_shape
    report = ParamValidator().validate({"modelId": MODEL, **body}, shape)
    assert not report.has_errors(), report.generate_report()
