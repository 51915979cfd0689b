"""`/gpu outlook 16x p5.48xlarge 3d [region=…|region=any] [days=N]`: checked in the ack
(a shape AWS never sells, a window over the limit, a region AWS does not have are
refused there); the figures are read from Redis after it."""

from __future__ import annotations

from slack_bolt import Ack, BoltContext

from bot.blocks.outlook import outlook_blocks, outlook_text
from bot.blocks.text import esc
from bot.domain.grammar import RequestSyntaxError
from bot.domain.outlook_query import OutlookQuery
from bot.services.container import Services
from handlers.conversation import Conversation, after_ack


def outlook_command(services: Services, ack: Ack, context: BoltContext, rest: str) -> None:
    try:
        query = services.outlook.parse(rest)
    except RequestSyntaxError as exc:
        ack(text=f":warning: {esc(str(exc))}")
        return
    after_ack(ack, context, _show, services, query)


def _show(talk: Conversation, services: Services, query: OutlookQuery) -> None:
    region = query.region or services.settings.aws_region
    title = query.title(region)
    found = services.outlook.answer(query)
    talk.show(outlook_text(title, found), outlook_blocks(title, found))
    services.outlook.chart_later(talk.interaction.user, query)
