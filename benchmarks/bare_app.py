"""The baseline for ack latency: a bare Bolt app whose /gpu listener only acks, served
exactly like gpu-bot (gunicorn gthread via bot.server, process_before_response=True).

Run: python -m benchmarks.bare_app --port 3100  (SLACK_SIGNING_SECRET must be set)
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from slack_bolt import Ack, App
from slack_bolt.authorization import AuthorizeResult

from bot.server import serve_http, wsgi_app


def make_application() -> Any:
    app = App(
        signing_secret=os.environ["SLACK_SIGNING_SECRET"],
        authorize=lambda **_: AuthorizeResult(
            enterprise_id=None,
            team_id="T0EXAMPLE",
            bot_user_id="UB",
            bot_id="B",
            bot_token="xoxb-bare",
        ),
        process_before_response=True,
    )

    @app.command("/gpu")
    def gpu(ack: Ack) -> None:
        ack(text="ok")

    return wsgi_app(app, lambda: True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=3100)
    args = parser.parse_args()
    serve_http(make_application, args.port)


if __name__ == "__main__":
    main()
