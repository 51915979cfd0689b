"""The request grammar shared by `/gpu reserve`, `/gpu quote` and `gpu-bot quote`.

Tokens may come in any order:

    2x | x2 | count=2                      instance count
    p5.48xlarge | ml.p5.48xlarge | type=…  instance type (ml. means SageMaker)
    36h | 3d | 2w | duration=3d            duration
    from 2026-12-14 | from 2026-12-14T09:00Z | from today | from tomorrow | start=…
    us-east-1 | region=us-east-1           region
    region=us-east-1,us-west-2 | region=any  search several regions, recommend one
    ec2 | sagemaker | env=…                environment
    training | inference | evaluation | event | workload=…
    interruptible                          the work checkpoints and can restart
    util=80%                               expected utilisation of the window
    reason="launch load test"              why (double quotes; \\" and \\\\ escape)

`parse_request` returns a `RequestDraft`; it raises only `RequestSyntaxError`.
`render_request` gives the canonical text, which parses back to the same draft.

The package by job: vocabulary.py (accepted forms, patterns, the error), tokens.py,
values.py (reading each field's value), text.py (`parse_request`), form.py
(`parse_form`), render.py (`render_request`, `render_duration`, `render_start`).
"""

from bot.domain.grammar.form import parse_form
from bot.domain.grammar.render import (
    duration_words,
    render_duration,
    render_request,
    render_start,
)
from bot.domain.grammar.text import parse_request
from bot.domain.grammar.vocabulary import (
    ACCEPTED_FORMS,
    FIELD_WORDS,
    MAX_SEARCHED_REGIONS,
    MAX_START_AHEAD,
    RequestSyntaxError,
    field_word,
    usage,
)

__all__ = [
    "ACCEPTED_FORMS",
    "FIELD_WORDS",
    "MAX_SEARCHED_REGIONS",
    "MAX_START_AHEAD",
    "RequestSyntaxError",
    "duration_words",
    "field_word",
    "parse_form",
    "parse_request",
    "render_duration",
    "render_request",
    "render_start",
    "usage",
]
