"""A local stand-in for Slack's Web API and response_url endpoints, on 127.0.0.1.

It answers what the bot calls (chat.*, views.*, auth.test, usergroups.users.list, and the
three steps of a file upload) the way Slack does, records every call in order, and can be
told to answer 429 or 500.

File uploads take Slack's current three steps: `files.getUploadURLExternal` gives a file
id and an upload URL (served here, as `upload`), the bytes are POSTed there, and
`files.completeUploadExternal` shares the file into `channel_id` (a thread with
`thread_ts`), where `conversations.replies` finds it. Completing a file id this server did
not issue, or one whose bytes did not arrive (or not as many as announced), is refused. The shell
renders what it records; the tests assert on it. Point `SLACK_API_URL` /
`WebClient(base_url=)` at `api_url`; response URLs are `response_url(token)`.

One module per job: calls.py (what is recorded, and reading a call's blocks and view),
checks.py (refusing what Slack would refuse), conversations.py (messages, history and
threads), files.py (the three steps of an upload), server.py (the HTTP server, faults and
the methods' answers).
"""

from bot.adapters.slack.local_api.calls import (
    MESSAGE_METHODS,
    RESPONSE_URL_METHOD,
    UPLOAD_METHOD,
    VIEW_METHODS,
    Call,
    UploadedFile,
    blocks_of,
    dm_channel,
    view_of,
)
from bot.adapters.slack.local_api.server import LocalSlackApi

__all__ = [
    "MESSAGE_METHODS",
    "RESPONSE_URL_METHOD",
    "UPLOAD_METHOD",
    "VIEW_METHODS",
    "Call",
    "LocalSlackApi",
    "UploadedFile",
    "blocks_of",
    "dm_channel",
    "view_of",
]
