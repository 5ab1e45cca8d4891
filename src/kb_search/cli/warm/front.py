"""The front door of a piped `kb search`: before click and the CLI are imported, the command
line goes to the database's warm server, which parses it with the command's own options and
answers with the JSON `kb search` prints. What it leaves (another command, a terminal, help,
a usage or search error, no server yet) runs the full CLI, which says what is wrong or starts
the server, exactly as before.

An agent pays for the interpreter, a socket and a JSON line here, not for the CLI's imports.
"""

from __future__ import annotations

import os
import sys

# Options that choose the database (their values find the server; its identity then proves it
# serves the config they resolve to), by the name App passes them on under; and `--color`.
DATABASE_OPTIONS = {"--data-dir": "data_dir", "--db": "db", "--config": "config"}
ROOT_OPTIONS = {*DATABASE_OPTIONS, "--color"}
FULL_CLI_OPTIONS = {"-h", "--help", "--version"}  # they print something other than results


def answer_from_warm_server(argv: list[str]) -> int | None:
    """The exit code once the warm server answered `kb ARGV` and its JSON is printed; None:
    run the full CLI."""
    from kb_search.cli.warm import off_by_environment

    if sys.stdout.isatty() or off_by_environment(os.environ):
        return None
    split = split_search(argv)
    if split is None:
        return None
    try:
        return _answer(*split)
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


def split_search(argv: list[str]) -> tuple[dict[str, str], list[str]] | None:
    """For `kb [ROOT OPTIONS] search ARGS`: the database options given (before the command
    or among ARGS, the last one winning as in click) and ARGS; None for any other command
    line."""
    flags: dict[str, str] = {}
    at = 0
    while at < len(argv) and argv[at] != "search":
        taken = _option(argv, at, ROOT_OPTIONS, flags)
        if taken is None:
            return None
        at += taken
    args = argv[at + 1 :]
    if at >= len(argv) or not args:
        return None
    at = 0
    while at < len(args) and args[at] != "--":
        if args[at].split("=", 1)[0] in FULL_CLI_OPTIONS:
            return None
        taken = _option(args, at, set(DATABASE_OPTIONS), flags)
        if taken == 0:
            return None
        at += taken or 1
    return flags, args


def _option(args: list[str], at: int, names: set[str], flags: dict[str, str]) -> int | None:
    """How many words the option at `at` takes (1 or 2; 0: its value is missing), recording
    a database option's value; None when it is not one of `names`."""
    name, equals, value = args[at].partition("=")
    if name not in names:
        return None
    if not equals:
        if at + 1 >= len(args):
            return 0
        value = args[at + 1]
    if name in DATABASE_OPTIONS:
        flags[DATABASE_OPTIONS[name]] = value
    return 1 if equals else 2


def _answer(flags: dict[str, str], args: list[str]) -> int | None:
    from kb_search.cli.warm import warm_client
    from kb_search.cli.warm.client import add_startup
    from kb_search.config import load_config
    from kb_search.environment import Environment, process_age_ms
    from kb_search.sanitize import json_text

    environment = Environment()
    config = load_config(
        env=environment.env,
        cwd=environment.cwd,
        home=environment.home,
        flags={k: v for k, v in flags.items() if k != "config"},
        config_path=flags.get("config"),
    )
    if config.ignored:  # the full CLI says which settings of the project file it ignored
        return None
    client = warm_client(config, environment.env)
    answer = client.forward(args) if client is not None else None
    if answer is None:
        return None
    sys.stdout.write(json_text(add_startup(answer, process_age_ms())) + "\n")
    sys.stdout.flush()
    return 0
