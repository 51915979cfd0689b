"""`gpu-bot`: one entry point, one module per subcommand."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from bot import __version__
from bot.cli import (
    catalog_cmd,
    config_cmd,
    deploy_cmd,
    mig_cmd,
    outlook_cmd,
    quote_cmd,
    requests_cmd,
    serve_cmd,
    shell_cmd,
    spend_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpu-bot",
        description="Compare, approve, buy and track short-term GPU capacity on AWS.",
    )
    parser.add_argument("--version", action="version", version=f"gpu-bot {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (
        serve_cmd,
        shell_cmd,
        quote_cmd,
        outlook_cmd,
        mig_cmd,
        deploy_cmd,
        catalog_cmd,
        config_cmd,
        requests_cmd,
        spend_cmd,
    ):
        module.register(sub)
    return parser


# The exit status of a process whose reader went away (128 + SIGPIPE), as shells report it.
EXIT_READER_GONE = 141


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # `gpu-bot catalog --json | head`: the reader has what it wanted. Nothing more is
        # written (Python would try again at exit and print a traceback).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_READER_GONE
    return code


if __name__ == "__main__":
    sys.exit(main())
