"""`/gpu watch`, `/gpu watches`, `/gpu unwatch`, `/gpu status W3` and the Stop button."""

from __future__ import annotations

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient

from bot.blocks.ids import ActionId
from bot.blocks.text import esc
from bot.blocks.values import WatchAskRef, WatchRef
from bot.blocks.watches import watch_status_blocks, watches_blocks, watching_text
from bot.domain.grammar import RequestSyntaxError
from bot.domain.watch import Watch, match_key
from bot.services.container import Services
from bot.services.watching import WatchError
from handlers.conversation import Conversation, after_ack, conversation
from handlers.home import publish_home

WATCH_EXAMPLE = "`/gpu watch 8x p5.48xlarge 3d from 2026-12-14 flex=7d max=40/h region=any`"


def register(app: App, services: Services) -> None:
    @app.action(ActionId.WATCH_STOP.value)
    def stop(ack: Ack, context: BoltContext, client: WebClient) -> None:
        after_ack(ack, context, stop_from_button, services, client)

    @app.action(ActionId.WATCH_START.value)
    def start(ack: Ack, context: BoltContext) -> None:
        after_ack(ack, context, watch_from_button, services)


WATCH_COMMANDS = ("watch", "watches", "unwatch")


def watch_command(services: Services, ack: Ack, context: BoltContext, sub: str, rest: str) -> None:
    """`/gpu watch …`, `/gpu watches`, `/gpu unwatch W3`."""
    if sub == "watch":
        handle_watch(services, ack, context, rest)
    elif sub == "watches":
        after_ack(ack, context, list_watches, services)
    elif not is_watch_id(rest):
        ack(text="Which watch? `/gpu unwatch W3` (`/gpu watches` lists yours).")
    else:
        after_ack(ack, context, unwatch, services, rest.strip())


def handle_watch(services: Services, ack: Ack, context: BoltContext, rest: str) -> None:
    """Checked before the ack (pure); stored in it, so the ack names the watch."""
    user = conversation(context).interaction.user
    try:
        made = services.watches.check(user, rest)
    except (RequestSyntaxError, WatchError) as exc:
        ack(text=f":warning: Not watching: {esc(str(exc))}\nExample: {WATCH_EXAMPLE}.")
        return
    try:
        watch = services.watches.create(made)
    except WatchError as exc:  # a limit reached: no example helps
        ack(text=f":warning: Not watching: {esc(str(exc))}")
        return
    regions = tuple(dict.fromkeys(q.region for q in made.asked))
    ack(text=_with_chance(services, watch, watching_text(watch, regions)))


def _with_chance(services: Services, watch: Watch, text: str) -> str:
    """The watch's first message, with how likely a match is (the capacity outlook)."""
    chance = services.outlook.chance_for(watch.request, watch.flex_hours)
    return f"{text}\n{chance}" if chance else text


def watch_from_button(talk: Conversation, services: Services) -> None:
    """The Watch button beside a quote's outlook line: the request it carries, watched
    as `/gpu watch` would (checked again: the start may have passed since)."""
    ref = talk.subject(WatchAskRef)
    if ref is None:
        return
    try:
        made = services.watches.check(talk.interaction.user, ref.text)
        watch = services.watches.create(made)
    except (RequestSyntaxError, WatchError) as exc:
        talk.refuse(f"Not watching: {exc}")
        return
    regions = tuple(dict.fromkeys(q.region for q in made.asked))
    talk.say(_with_chance(services, watch, watching_text(watch, regions)))


def list_watches(talk: Conversation, services: Services) -> None:
    watches, everyone = services.watches.listed(talk.interaction.user)
    talk.show("Watches", watches_blocks(watches, everyone))


def unwatch(talk: Conversation, services: Services, raw_id: str) -> None:
    try:
        watch = services.watches.stop(talk.interaction.user, raw_id)
    except WatchError as exc:
        talk.refuse(str(exc))
        return
    talk.show(f":octagonal_sign: Stopped {watch.id}: it looks for nothing more.")


def show_watch(talk: Conversation, services: Services, raw_id: str) -> None:
    try:
        watch = services.watches.get(talk.interaction.user, raw_id)
    except WatchError as exc:
        talk.refuse(str(exc))
        return
    history = services.watches.history(watch.id)
    # The request each match made (one per watch and offering, see watch_rounds).
    made = (services.store.id_for(match_key(watch.id, s.offering_id)) for s in watch.sent)
    matches = [r for r in map(services.queries.get, made) if r is not None]
    blocks = watch_status_blocks(watch, history, matches)
    talk.show(f"Watch {watch.id}: {watch.state.value}", blocks)


def stop_from_button(talk: Conversation, services: Services, client: WebClient) -> None:
    ref = talk.subject(WatchRef)
    if ref is None:
        return
    unwatch(talk, services, ref.watch_id)
    if talk.interaction.from_home:
        publish_home(services, client, talk.actor)


def is_watch_id(text: str) -> bool:
    word = text.strip().upper()
    return word.startswith("W") and word[1:].isdigit()
