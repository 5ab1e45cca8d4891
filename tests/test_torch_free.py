"""The installed runtime never imports torch (nor onnx, an extra for int8 only): `kb add` and a
hybrid `kb search` must work with a torch that explodes on import placed first on the path."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.model


def test_add_and_hybrid_search_never_import_torch(tmp_path, sample, model_cache):
    poison = tmp_path / "poison"
    for name in ("torch", "sentence_transformers", "transformers", "onnx"):
        (poison / name).mkdir(parents=True)
        (poison / name / "__init__.py").write_text(f"raise RuntimeError('{name} was imported')\n")
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(poison), os.environ.get("PYTHONPATH", "")]),
        KB_DATA_DIR=str(tmp_path / "data"),
        KB_MODEL_CACHE=str(model_cache),
    )
    kb = [sys.executable, "-m", "kb_search"]
    added = subprocess.run(
        [*kb, "add", str(sample), "--format", "json"], env=env, capture_output=True, text=True
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["added"] == 9
    found = subprocess.run(
        [*kb, "search", "nightly backup of git repositories", "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert found.returncode == 0, found.stderr
    data = json.loads(found.stdout)
    assert data["legs"] == {"lexical": "ok", "vector": "ok"}
    assert data["results"][0]["score_breakdown"]["vector"] is not None
