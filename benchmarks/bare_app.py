"""The baseline for ack latency: a stock Bolt app, as Bolt's documentation serves it: its
WSGI adapter (`slack_bolt.adapter.wsgi.SlackRequestHandler`) under plain gunicorn
(gthread), `process_before_response=True`, and a /gpu listener that only acks. None of
gpu-bot's own server code is in its path.

Run: SLACK_SIGNING_SECRET=... gunicorn -k gthread --threads 16 -w 1 \
         --bind 127.0.0.1:3100 benchmarks.bare_app:application
"""

from __future__ import annotations

import os

from slack_bolt import Ack, App
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_bolt.authorization import AuthorizeResult

app = App(
    signing_secret=os.environ["SLACK_SIGNING_SECRET"],
    # One workspace, as gpu-bot: no auth.test call per request.
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


application = SlackRequestHandler(app)
