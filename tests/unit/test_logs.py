"""Tokens and secrets never reach a log line; the fields bound reach every line."""

from __future__ import annotations

import io
import json
import logging
import threading

from bot.after_ack import AfterAck
from bot.logs import TEXT, Context, JsonFormatter, Redact, bind, start_fields


def _logger(formatter: logging.Formatter, secrets: list[str]) -> tuple[logging.Logger, io.StringIO]:
    start_fields()  # this thread may have served an in-process Bolt request before
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    handler.addFilter(Context())
    handler.addFilter(Redact(secrets))
    logger = logging.getLogger(f"test-logs-{id(out)}")
    logger.propagate = False
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    return logger, out


def test_tokens_and_secrets_are_masked_in_messages_and_tracebacks() -> None:
    logger, out = _logger(JsonFormatter(), ["the-signing-secret"])
    logger.warning("posting with %s", "xoxb-1234-5678-abcdef")
    logger.info("app token xapp-1-A0-123-abc and secret the-signing-secret")
    try:
        raise RuntimeError("refused: token xoxb-99-secretpart")
    except RuntimeError:
        logger.exception("failed")
    text = out.getvalue()
    for secret in ("xoxb-1234", "xapp-1-A0", "the-signing-secret", "xoxb-99"):
        assert secret not in text
    assert text.count("[redacted]") >= 4  # the traceback shows the raising line too
    assert all(json.loads(line) for line in text.splitlines())


def test_text_lines_stay_readable_and_show_the_fields() -> None:
    logger, out = _logger(logging.Formatter(TEXT), [])
    with bind(request_id="R7", slack_user="U0ME"):
        logger.info("quoted")
    logger.info("idle")
    first, second = out.getvalue().splitlines()
    assert first.endswith(" [request=R7 slack_user=U0ME] quoted")
    assert second.endswith(": idle")


def test_work_after_the_ack_carries_the_fields_of_its_request() -> None:
    logger, out = _logger(JsonFormatter(), [])
    pool = AfterAck(max_workers=1)
    done = threading.Event()
    with bind(request_id="R9", slack_user="U0YOU"):
        pool.run(lambda: (logger.info("after the ack"), done.set()))
    assert done.wait(5)
    pool.shutdown()
    (line,) = [json.loads(x) for x in out.getvalue().splitlines()]
    assert line["request_id"] == "R9"
    assert line["slack_user"] == "U0YOU"
