from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kb_search.cli import cli
from kb_search.environment import Environment
from kb_search.store import db
from kb_testing import HashEmbedder, register_test_embedder

SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sample"

register_test_embedder()
# No test starts a warm search server unless it asks for one (tests/cli/warm does): a server would
# outlive the test, and it cannot see the test embedder registered in this process.
os.environ["KB_NO_WARM"] = "1"


@pytest.fixture
def conn():
    connection = db.connect(":memory:")
    yield connection
    connection.close()


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory) -> Path:
    """One converted model for the whole test session (conversion takes seconds)."""
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture
def environment(request, tmp_path: Path, model_cache: Path) -> Environment:
    """In-process `kb` runs: the test embedder, unless the test is marked `model`."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "KB_DATA_DIR": str(tmp_path / "data dir"),
        "KB_MODEL_CACHE": str(model_cache),
        "HF_HUB_OFFLINE": "1",
        "KB_NO_WARM": "1",  # tests/cli/warm turns the warm search server on
    }
    if request.node.get_closest_marker("model") is None:
        env["KB_MODEL"] = HashEmbedder.name
    return Environment(
        env=env,
        cwd=tmp_path,
        stdout_isatty=False,
        stderr_isatty=False,
    )


@pytest.fixture
def kb(environment: Environment):
    """Run `kb ...` in-process against a throwaway data dir; returns the click Result."""
    runner = CliRunner()

    def run(*args: str, ok: bool = True):
        result = runner.invoke(cli, list(args), obj=environment, catch_exceptions=False)
        if ok:
            assert result.exit_code == 0, result.output + result.stderr
        return result

    run.json = lambda *args: json.loads(run(*args, "--format", "json").stdout)
    return run


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A copy of the bundled sample corpus under a path with a space in it."""
    target = tmp_path / "my notes"
    shutil.copytree(SAMPLE, target)
    return target
