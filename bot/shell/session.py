"""The shell's read-eval-print loop: slash commands, button presses, forms, switching
user, App Home, and the sandbox clock. Every action goes through the real app as the
request Slack would send; everything the app sends back is shown by the `Screen`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from bot.blocks.help import example_request
from bot.blocks.text import when
from bot.config_values import parse_config_duration
from bot.shell import payloads
from bot.shell.console_api import COMMAND_CHANNEL, Ack, ConsoleSlack
from bot.shell.instances import ShellInstances
from bot.shell.market import market_command
from bot.shell.people import DEFAULT_APPROVERS, YOU, People, Person
from bot.shell.questions import FORM_HELP, Values, confirmed, fill_in
from bot.shell.screen import Audience, OpenedModal, Pressable, ResponseTarget, Screen, Unpressable
from bot.shell.style import ANSI, PLAIN
from bot.shell.terminal import EndOfInput, Terminal

SLASH_COMMAND = "/gpu"
MOST_DAYS = 365
HELP = f"""\
Shell commands:
  /gpu …           a slash command from the current user (/gpu help lists them)
  press N          click button [N] of the latest output
  show N           show message N again, to press its buttons
  as NAME          act as someone else: you, alice, bob, or any user id (U…)
  home             open App Home as the current user
  whoami           who you are acting as
  clock [+2h]      show the sandbox time, or move it forward (s, m, h, d, w) and run due jobs
  market …         move the sandbox market: release, take or churn (`market` says how)
  days 30          let 30 sandbox days pass, a day at a time (the outlook scan, due jobs)
  launch 4 into R1 start instances in request R1's reservation (or window), tagged with it
  stop 2 in R1     terminate 2 of the instances tagged with R1
  worker           run the jobs due now
  help             this text
  quit             leave (also exit, or Ctrl-D)
In a form: {FORM_HELP}
  A command typed in a form (/gpu …, press 2, as bob, …) closes it and runs.
A # at the start of a line, or after two spaces, starts a comment (not inside quotes)."""


class Session:
    def __init__(self, slack: ConsoleSlack, terminal: Terminal, people: People) -> None:
        self.slack = slack
        self.term = terminal
        self.people = people
        self.user: Person = YOU
        channels = {slack.approval_channel: "approvals", COMMAND_CHANNEL[0]: COMMAND_CHANNEL[1]}
        self.screen = Screen(people, ANSI if terminal.color else PLAIN, channels)
        self._commands: dict[str, Callable[[str], None]] = {
            "press": self.press,
            "show": self.show,
            "as": self.act_as,
            "whoami": self.whoami,
            "home": self.home,
            "clock": self.clock,
            "worker": self.worker,
            "market": self.market,
            "days": self.days,
            "help": self.help,
            "launch": lambda text: self._instances(self.instances.launch, text),
            "stop": lambda text: self._instances(self.instances.stop, text),
        }
        self.instances = ShellInstances(slack.services)

    def run(self) -> int:
        self.term.write(self._banner())
        while True:
            try:
                if not self.handle(self.term.read(f"{self.user.name}> ").strip()):
                    return 0
            except EndOfInput:
                return 0  # Ctrl-D or the end of a script: leave like `quit`
            except KeyboardInterrupt:
                # Ctrl-C drops the line or the form being filled in, as shells do.
                self.term.write("\n(interrupted; `quit` leaves)")

    def handle(self, line: str) -> bool:
        """Run one command line; False when the shell should end."""
        word, _, rest = line.partition(" ")
        rest = rest.strip()
        if not line:
            return True
        if word in ("quit", "exit"):
            return False
        if line.startswith("/"):
            self.slash(word, rest)
        elif word in self._commands:
            self._commands[word](rest)
        else:
            self.term.write(
                f'Unknown command "{line[:40]}". Type `help` for the shell\'s commands; '
                f"slash commands start with {SLASH_COMMAND}."
            )
        return True

    def is_command(self, line: str) -> bool:
        """Whether `line` is one of the shell's commands as typed at the prompt (a form
        ends there rather than take it for a value): a slash command, or a shell command
        with what it takes (`press 2`, `as bob`, `clock +2h`; `as soon as…` is not one)."""
        word, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        if word.startswith("/"):
            return True
        if word in ("press", "show"):
            return rest.isdigit()
        if word == "as":
            return bool(rest) and " " not in rest and self.people.knows(rest)
        if word == "clock":
            return not rest or rest.startswith("+")
        if word == "days":
            return rest.isdigit()
        if word == "market":
            return rest.split(" ", 1)[0] in ("release", "take", "churn")
        if word in ("launch", "stop"):
            return " in" in f" {rest}"
        return word in ("quit", "exit", "whoami", "home", "worker", "help") and not rest

    # --- commands ---------------------------------------------------------------------

    def slash(self, command: str, text: str) -> None:
        if command != SLASH_COMMAND:
            self.term.write(f"Only {SLASH_COMMAND} is installed here: try {SLASH_COMMAND} help.")
            return
        token, url = self.slack.response_url()
        self.screen.expect_responses(token, ResponseTarget(self.user.id, COMMAND_CHANNEL[0]))
        body = payloads.slash_command(
            command, text, self.user, COMMAND_CHANNEL, url, self._trigger()
        )
        self._settle(self.slack.dispatch(body), token)

    def press(self, number: str) -> None:
        if not number.isdigit():
            self.term.write("Which button? `press 1` clicks [1].")
            return
        try:
            pressed = self.screen.pressable(int(number), self.user.id)
        except Unpressable as exc:
            self.term.write(str(exc))
            return
        confirm = pressed.button.element.get("confirm")
        if confirm and not confirmed(self.term, self.screen.renderer(), confirm):
            self.term.write("Not pressed.")
            return
        body = payloads.button_click(
            self.user,
            pressed.button.element,
            pressed.button.block_id,
            self._surface(pressed),
            self._trigger(),
        )
        self._settle(self.slack.dispatch(body))

    def show(self, number: str) -> None:
        if not number.isdigit():
            self.term.write("Which message? `show 2` shows message 2 again.")
            return
        try:
            self.term.write(self.screen.reshow(int(number), self.user.id))
        except Unpressable as exc:
            self.term.write(str(exc))

    def act_as(self, who: str) -> None:
        person = self.people.find(who) if who else None
        if person is None:
            self.term.write(f"Act as whom? Known: {self.people.listed()}, or any user id (U…).")
            return
        self.user = person
        self.whoami()

    def whoami(self, _: str = "") -> None:
        approver = self.slack.services.approvals.is_approver(self.user.id)
        role = ", an approver" if approver else ""
        self.term.write(f"You are {self.user.label}{role}.")

    def home(self, _: str = "") -> None:
        dm_channel = "D" + self.user.id[1:]
        shown = self.screen.homes.get(self.user.id)
        self._settle(self.slack.dispatch(payloads.app_home_opened(self.user, dm_channel, shown)))

    def clock(self, move: str) -> None:
        if not move:
            self.term.write(f"Sandbox time: {when(self.slack.clock.now())}.")
            return
        try:
            if not move.startswith("+"):
                raise ValueError(move)
            delta = parse_config_duration(move[1:])
        except ValueError:
            self.term.write("The clock moves forward only: `clock +2h` (s, m, h, d or w).")
            return
        self.term.write(f"Sandbox time is now {when(self.slack.advance(delta))}.")
        self.worker()

    def market(self, words: str) -> None:
        self.term.write(market_command(self.slack.sandbox_market(), words, self.slack.clock.now()))

    def days(self, text: str) -> None:
        """Let sandbox days pass for the capacity outlook: each day the clock moves a day,
        the scan asks its shapes once (on whatever `market churn` left), and due jobs run."""
        if not text.isdigit() or not 1 <= int(text) <= MOST_DAYS:
            self.term.write(f"How many days? `days 30` (1 to {MOST_DAYS}).")
            return
        scan = self.slack.services.outlook_scan
        searches = 0
        for _ in range(int(text)):
            self.slack.advance(timedelta(days=1))
            searches += scan.scan_once() if scan.queries else 0
            self.slack.run_due_jobs()
        said = (
            f"the outlook scan made {searches} searches, a round each day"
            if scan.queries
            else "no outlook scan (GPU_BOT_OUTLOOK_SHAPES is empty)"
        )
        self.term.write(
            f"{text} sandbox days passed; it is now {when(self.slack.clock.now())}: {said}."
        )
        self._settle(None)

    def worker(self, _: str = "") -> None:
        ran = self.slack.run_due_jobs()
        self.term.write(f"{ran} due job{'s' if ran != 1 else ''} ran." if ran else "No jobs due.")
        self._settle(None)

    def _instances(self, change: Callable[[str], tuple[str, bool]], text: str) -> None:
        """Launch or stop; when something changed, the next sampling round is brought
        forward to now (as it comes within minutes in Slack), so `clock` shows it."""
        said, changed = change(text)
        self.term.write(said)
        if changed:
            self.instances.sample_now()
            self.worker()

    def help(self, _: str = "") -> None:
        self.term.write(HELP)

    # --- the app's answers ------------------------------------------------------------

    def _settle(self, ack: Ack | None, token: str | None = None) -> None:
        """Show the ack and everything the app sent after it; then fill in the modals it
        opened, one after the other."""
        if ack is not None and ack.status != 200:
            self.term.write(f"(the app answered HTTP {ack.status})")
        shown_ack = (token, ack) if token is not None and ack is not None else None
        self.term.write(self.screen.show(self.slack.settle(), shown_ack))
        for opened in self.screen.take_opened():
            self._fill(opened)

    def _trigger(self) -> str:
        trigger = self.slack.trigger_id()
        self.screen.expect_trigger(trigger, self.user.id)
        return trigger

    def _surface(self, pressed: Pressable) -> dict[str, Any]:
        message = pressed.message
        if message is None:
            return payloads.view_surface(pressed.home or {})
        token, url = self.slack.response_url()
        self.screen.expect_responses(token, ResponseTarget(self.user.id, message.channel, message))
        channel = (message.channel, self.screen.channels.get(message.channel, "directmessage"))
        ephemeral = message.audience is Audience.EPHEMERAL
        return payloads.message_surface(channel, message.as_sent(), ephemeral, url)

    def _fill(self, opened: OpenedModal) -> None:
        person = self.people.find(opened.user) or self.user

        def submit(values: Values) -> Ack:
            body = payloads.view_submission(person, opened.view, values, self._trigger())
            return self.slack.dispatch(body)

        ack = fill_in(self.term, opened.view, submit, self.is_command)
        if ack is not None:
            self._settle(ack)

    def _banner(self) -> str:
        example = example_request(self.slack.clock.now())
        approvers = self.slack.settings.approvers
        who = ", ".join(self.people.get(a).label for a in approvers) or (
            f"members of {self.slack.settings.approver_group}"
        )
        if list(approvers) != [p.id for p in DEFAULT_APPROVERS]:
            # Set in the environment or a .env: say so, or nobody knows why alice cannot.
            source = "GPU_BOT_APPROVERS" if approvers else "GPU_BOT_APPROVER_GROUP"
            who += (
                f" (from {source} in the environment or .env, in place of the demo's alice "
                "and bob; unset it to approve as them)"
            )
        return (
            "gpu-bot shell: the real bot and listeners, with a simulated AWS market (sandbox) "
            "and an in-memory store.\nNothing is bought and nothing leaves this machine. "
            f"You are {self.user.label}; approvers: {who}.\n"
            f"Try `{SLASH_COMMAND} reserve {example}`; `help` lists the shell's commands."
        )
