"""The README's example is what `gpu-bot shell` prints today (regenerate it with
`python -m tests.readme_example`)."""

from __future__ import annotations

from tests.readme_example import README, block, masked, shown_in_readme, transcript


def test_the_readme_example_is_what_the_shell_prints(redis_url: str, namespace: str) -> None:
    printed = block(transcript(redis_url, namespace))
    shown = shown_in_readme(README.read_text())
    assert masked(shown) == masked(printed), "run `python -m tests.readme_example`"
