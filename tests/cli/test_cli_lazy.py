"""The `kb` group imports a command's module only when that command runs."""

from __future__ import annotations

import importlib

import click

from kb_search.cli import COMMAND_MODULES, cli


def test_every_command_is_found_in_the_module_the_map_names() -> None:
    modules = set(COMMAND_MODULES.values())
    declared = {
        command.name: module
        for module in modules
        for command in importlib.import_module(f"kb_search.cli.{module}").COMMANDS
    }
    assert declared == COMMAND_MODULES
    context = click.Context(cli)
    assert cli.list_commands(context) == sorted(COMMAND_MODULES)
    for name in COMMAND_MODULES:
        assert cli.get_command(context, name).name == name


def test_the_search_pipeline_imports_no_numpy():
    """A lexical one-shot search must not pay for numpy (~90 ms): only the vector leg needs it;
    nor for hashlib (~4 ms, OpenSSL), nor for compiling the CJK character class (~7 ms) or
    loading OpenCC's kanji tables when the query is plain ASCII."""
    import subprocess
    import sys

    code = (
        "import sys, kb_search.search.pipeline, kb_search.knowledge_base;"
        "from kb_search.search.query import parse_query;"
        "from kb_search.cjk import _pattern;"
        "parse_query('how do I roll back an app').cjk_runs();"
        "print('numpy' in sys.modules, 'hashlib' in sys.modules, _pattern.cache_info().currsize,"
        " 'opencc' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False 0 False"


def test_a_search_with_the_warm_path_off_imports_no_warm_client(tmp_path):
    """KB_NO_WARM: neither the front door nor the search command loads the socket client."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "KB_NO_WARM": "1", "KB_DATA_DIR": str(tmp_path), "KB_MODEL": "none"}
    code = (
        "import sys; sys.argv = ['kb', 'search', 'x', '--mode', 'lexical'];"
        "from kb_search.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('kb_search.cli.warm.client' in sys.modules, file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stderr.strip().splitlines()[-1] == "False", out.stderr


def test_the_warm_front_door_imports_only_what_it_uses():
    """Every piped `kb search` imports the front door and what it calls before the server
    answers: no click, numpy or model code, and none of the stdlib's slow imports
    (dataclasses brings inspect and ast, ~15 ms; typing ~5; pickle, signal and tempfile are
    needed only off the answered path)."""
    import subprocess
    import sys

    slow = ["click", "numpy", "dataclasses", "inspect", "typing", "pickle", "signal", "tempfile"]
    code = (
        "import sys, os;"
        "os.environ['XDG_RUNTIME_DIR'] = sys.argv[1];"
        "import kb_search.cli, kb_search.cli.warm.front as front;"
        "from kb_search.config import load_config;"
        "from kb_search.environment import Environment, process_age_ms;"
        "from kb_search.sanitize import json_text;"
        "from kb_search.cli.warm.client import WarmClient;"
        "config = load_config(flags={'data_dir': sys.argv[1]});"
        "print(WarmClient(config, Environment().env).forward(['x']));"
        f"print(sorted(m for m in {slow!r} if m in sys.modules))"
    )
    import tempfile

    with tempfile.TemporaryDirectory() as runtime:
        out = subprocess.run(
            [sys.executable, "-c", code, runtime], capture_output=True, text=True, check=True
        )
    assert out.stdout.splitlines() == ["None", "[]"], out.stdout + out.stderr
