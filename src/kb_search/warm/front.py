"""The front door of a piped `kb search`: before click and the CLI are imported, the command
line goes to the database's warm server, which parses it with the command's own options and
answers with the JSON `kb search` prints. What it leaves (another command, a terminal, an
option naming a database or config, help, a usage or search error, no server yet) runs the
full CLI, which says what is wrong or starts the server, exactly as before.

An agent pays for the interpreter, a socket and a JSON line here, not for the CLI's imports.
"""

from __future__ import annotations

import os
import sys

# Options the server's identity does not cover, or that print something other than results.
FULL_CLI_OPTIONS = {"--data-dir", "--db", "--config", "-h", "--help", "--version"}


def answer_from_warm_server(argv: list[str]) -> int | None:
    """The exit code once the warm server answered `kb ARGV` and its JSON is printed; None:
    run the full CLI."""
    from kb_search.warm import off_by_environment

    if not argv or argv[0] != "search" or sys.stdout.isatty() or off_by_environment(os.environ):
        return None
    if any(arg.split("=", 1)[0] in FULL_CLI_OPTIONS for arg in argv[1:]):
        return None
    try:
        return _answer(argv[1:])
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader stopped reading (`| head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # a KbError, an unreadable config...: the full CLI reports it
        if os.environ.get("KB_DEBUG"):
            print(f"kb warm: front door: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def _answer(args: list[str]) -> int | None:
    from kb_search.config import load_config
    from kb_search.environment import Environment, process_age_ms
    from kb_search.sanitize import json_text
    from kb_search.warm.client import WarmClient, add_startup

    environment = Environment()
    config = load_config(env=environment.env, cwd=environment.cwd, home=environment.home)
    answer = WarmClient(config, environment.env).forward(args)
    if answer is None:
        return None
    sys.stdout.write(json_text(add_startup(answer, process_age_ms())) + "\n")
    sys.stdout.flush()
    return 0
