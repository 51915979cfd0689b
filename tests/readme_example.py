"""The README's example transcript, made by running `gpu-bot shell` on a fixed sandbox
clock. `python -m tests.readme_example` writes it into README.md (Redis at
REDIS_TEST_URL, or 127.0.0.1:6379/0); `test_readme_example.py` checks it matches."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

import redis

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- example:start -->\n", "<!-- example:end -->"
# The sandbox clock at the start: the quote, the deadline and the offerings follow from it.
CLOCK = datetime(2026, 11, 30, 5, 8, tzinfo=UTC)
SCRIPT = [
    '/gpu reserve 2x p5.48xlarge 3d from tomorrow ec2 util=90% reason="launch load test"',
    "press 1",  # Submit for approval…
    "",  # the recommended option
    "",  # the reason given in the command
    "as alice",
    "press 1",  # Approve
    "y",
]
INTRO = (
    "A request, its approval, the purchase that follows and what the requester is told, as\n"
    "`gpu-bot shell` prints the Slack messages (the same Block Kit the bot posts; `[1]` are\n"
    "buttons, `press 1` clicks). Made by `python -m tests.readme_example`, checked by the "
    "tests:\n"
)
# AWS's ids are new on every purchase.
RANDOM_IDS = re.compile(r"\b(cr|cb)-[0-9a-f]{17}\b")


def transcript(redis_url: str, namespace: str) -> str:
    """What the shell prints for SCRIPT, after its banner, lines stripped at the end."""
    client = redis.Redis.from_url(redis_url)
    client.set("{" + namespace + "}:sandbox:clock", CLOCK.timestamp())
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLACK_", "GPU_BOT_", "AWS_", "REDIS_"))
    }
    env |= {"REDIS_URL": redis_url, "GPU_BOT_NAMESPACE": namespace}
    # This checkout's code, not whichever one the environment has installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(README.parent), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "bot", "shell"],
        input="\n".join(SCRIPT) + "\n",
        env=env | {"HOME": tempfile.gettempdir()},
        cwd=README.parent / "tests",  # no .env
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = done.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("you> "))
    return "\n".join(line.rstrip() for line in lines[first:]) + "\n"


def block(text: str) -> str:
    return f"{START}{INTRO}\n```text\n{text}```\n{END}"


def shown_in_readme(readme: str) -> str:
    return readme[readme.index(START) : readme.index(END) + len(END)]


def masked(text: str) -> str:
    return RANDOM_IDS.sub(lambda m: f"{m.group(1)}-…", text)


def main() -> None:
    url = os.environ.get("REDIS_TEST_URL", "redis://127.0.0.1:6379/0")
    namespace = f"gpu-example-{uuid.uuid4().hex[:12]}"
    try:
        text = transcript(url, namespace)
    finally:
        client = redis.Redis.from_url(url)
        keys = list(client.scan_iter(match="{" + namespace + "}*"))
        if keys:
            client.delete(*keys)
    readme = README.read_text()
    README.write_text(readme.replace(shown_in_readme(readme), block(text)))
    print(f"{README}: example written")


if __name__ == "__main__":
    main()
