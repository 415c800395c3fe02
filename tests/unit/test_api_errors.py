"""API failures are told apart by their types (the SDK's and its HTTP library's), never by
class names or message text."""

from __future__ import annotations

import httpx
import httpx2
import pytest
from google.genai import errors

from genai_magics import messages
from genai_magics.gemini.errors import describe, status_code


def told(exc: BaseException) -> str:
    return str(describe(exc, attempts=3, timeout_s=7))


@pytest.mark.parametrize("http", [httpx, httpx2])
def test_transport_failures_by_type_from_either_http_library(http):
    request = http.Request("POST", "http://127.0.0.1:1/v1/models/m:streamGenerateContent")
    assert told(http.ReadTimeout("read", request=request)) == messages.TIMED_OUT.render(timeout_s=7, attempts=3)
    assert told(http.ConnectError("[Errno 111] refused", request=request)) == messages.UNREACHABLE.render(
        error="[Errno 111] refused"
    )
    assert told(http.RemoteProtocolError("peer closed", request=request)) == messages.STREAM_CUT.render()


def test_a_wrapped_transport_failure_is_found_in_the_chain():
    class ClientWrapper(Exception):  # as the interactions client wraps httpx's errors
        pass

    try:
        try:
            raise httpx2.ConnectTimeout("connect")
        except httpx2.ConnectTimeout as inner:
            raise ClientWrapper("Connection error.") from inner
    except ClientWrapper as outer:
        assert told(outer) == messages.TIMED_OUT.render(timeout_s=7, attempts=3)


def test_http_statuses_from_the_sdk_errors():
    assert told(errors.ClientError(429, {"error": {"code": 429, "message": "quota"}})) == messages.RATE_LIMITED.render(
        attempts=3
    )
    assert told(errors.ServerError(503, {"error": {"code": 503, "message": "busy"}})) == messages.SERVER_ERROR.render(
        code=503, attempts=3
    )
    assert status_code(errors.ClientError(404, {"error": {"code": 404, "message": "no such model"}})) == 404


def test_look_alikes_are_not_classified():
    class NotAnApiError(Exception):
        code = 404  # duck-typed attributes mean nothing
        status_code = 429

    assert status_code(NotAnApiError("x")) is None
    text = told(RuntimeError("Timeout: connection refused, peer closed connection, incomplete read"))
    assert text.startswith("RuntimeError: Timeout: connection refused")
    assert told(NotAnApiError("Read timed out")) == "NotAnApiError: Read timed out"
