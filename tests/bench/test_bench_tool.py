"""`python -m bench`: lists the benchmarks, runs one by name, finds data under --data."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_list_names_every_benchmark_module_and_no_helper():
    listed = bench()
    assert listed.returncode == 0, listed.stderr
    names = {line.split()[0] for line in listed.stdout.splitlines()[2:] if line.strip()}
    modules = {p.stem for p in (ROOT / "bench").glob("*.py")}
    helpers = {"__init__", "__main__", "harness", "ann_data", "ann_libs"}
    assert names == modules - helpers


def test_an_unknown_name_is_one_clear_line_and_exit_2():
    unknown = bench("fusion_study")
    assert unknown.returncode == 2
    assert unknown.stderr.splitlines()[0] == "no benchmark 'fusion_study'"


def test_a_benchmark_runs_by_name_with_its_data_found_under_data(tmp_path):
    ran = bench(
        "lexical", "--data", str(ROOT / "examples"), "sample", "--repeat", "1", cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    assert re.search(r"^files found / indexed / failed +9 / 9 / 0$", ran.stdout, re.M), ran.stdout
    help_text = bench("lexical", "--help").stdout
    assert help_text.startswith("usage: python -m bench lexical")
    assert "--data DATA" in help_text
