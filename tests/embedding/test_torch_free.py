"""The installed runtime never imports torch: `kb add` and a hybrid `kb search` must work with a
torch that explodes on import placed first on the path. onnx builds the graph when `kb add`
converts the model; a search on a converted model does not import it either."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.model


def test_add_and_hybrid_search_never_import_torch(tmp_path, sample, model_cache):
    torch_free = poisoned(tmp_path / "no-torch", "torch", "sentence_transformers", "transformers")
    onnx_free = poisoned(tmp_path / "no-onnx", "onnx")
    env = dict(os.environ, KB_DATA_DIR=str(tmp_path / "data"), KB_MODEL_CACHE=str(model_cache))
    kb = [sys.executable, "-m", "kb_search"]
    added = subprocess.run(
        [*kb, "add", str(sample), "--format", "json"],
        env=with_path(env, torch_free),
        capture_output=True,
        text=True,
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["added"] == 9
    found = subprocess.run(
        [*kb, "search", "nightly backup of git repositories", "--format", "json"],
        env=with_path(env, torch_free, onnx_free),
        capture_output=True,
        text=True,
    )
    assert found.returncode == 0, found.stderr
    data = json.loads(found.stdout)
    assert data["legs"] == {"lexical": "ok", "vector": "ok"}
    assert data["results"][0]["score_breakdown"]["vector"] is not None


def poisoned(folder, *names: str):
    """A folder of packages that raise when imported."""
    for name in names:
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text(f"raise RuntimeError('{name} was imported')\n")
    return folder


def with_path(env: dict[str, str], *folders) -> dict[str, str]:
    path = [*map(str, folders), env.get("PYTHONPATH", "")]
    return {**env, "PYTHONPATH": os.pathsep.join(path)}
