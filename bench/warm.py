"""Fresh-process `kb search` latency with and without the warm search server, beside a
baseline kb (another checkout's own venv and index of the same files), in one run.

    python -m bench warm --data-dir /tmp/h-cli/warm/warm-data \\
        --base-kb /work/wt/base/.venv/bin/kb --base-data-dir /tmp/h-cli/warm/base-data

Each sample is one `kb search QUERY --format json` process, wall time from spawn to exit
(interpreter start, imports, model load where there is one, the search, JSON out). Rows are
interleaved query by query so that machine noise hits them alike. With `--build PATH...` a
missing index is built first (`kb add`, under `nice`). Prints one table: p50/p95 per row, the
ratio to the baseline's p50 in the same mode, and the issue-12 target; and what the call that
starts a server pays for it (`--first-calls` rounds).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import harness
from bench.lexical import QUERIES
from kb_search.evaluate import percentile

THIS_KB = Path(sys.executable).with_name("kb")
TARGETS = {"lexical": 100.0, "hybrid": 300.0, "hybrid warm": 120.0, "lexical warm": 100.0}


@dataclass
class Row:
    label: str
    kb: Path
    data_dir: Path
    mode: str
    warm: bool
    target_key: str
    samples: list[float] = field(default_factory=list)  # wall ms
    cpu: list[float] = field(default_factory=list)  # the client process's CPU ms

    def command(self, query: str) -> list[str]:
        return [str(self.kb), "--data-dir", str(self.data_dir), "search", query,
                "--mode", self.mode, "--format", "json"]  # fmt: skip


def environment(warm: bool, warm_dir: Path) -> dict[str, str]:
    env = {**os.environ, "KB_WARM_DIR": str(warm_dir), "KB_WARM_IDLE_S": "600"}
    env.pop("KB_NO_WARM", None)
    if not warm:
        env["KB_NO_WARM"] = "1"
    return env


def timed(row: Row, query: str, warm_dir: Path) -> tuple[float, float, dict]:
    """(wall ms, CPU ms of the process: user + system, its JSON less timings) for one fresh
    `kb search`."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            row.command(query), env=environment(row.warm, warm_dir), stdout=out, stderr=err
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = (time.perf_counter() - started) * 1000
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise SystemExit(f"{row.label}: {query!r} failed: {err.read().decode().strip()}")
        answer = json.loads(out.read())  # a whole answer, not an error
    answer.pop("timings_ms", None)
    return wall, (usage.ru_utime + usage.ru_stime) * 1000, answer


def cpu_ms(pid: int) -> float:
    """CPU time a running process has used (user + system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def kb_json(data_dir: Path, env: dict[str, str], *args: str) -> dict:
    """`kb --data-dir DATA_DIR ARGS --format json` (this checkout's kb), parsed."""
    command = [str(THIS_KB), "--data-dir", str(data_dir), *args, "--format", "json"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def warm_status(data_dir: Path, warm_dir: Path) -> dict:
    return kb_json(data_dir, environment(True, warm_dir), "warm", "status")


def start_server(data_dir: Path, warm_dir: Path) -> float:
    """Start the warm server the way `kb search` does; seconds until it answered."""
    started = time.perf_counter()
    row = Row("start", THIS_KB, data_dir, "hybrid", True, "")
    timed(row, QUERIES[0], warm_dir)
    while not warm_status(data_dir, warm_dir)["running"]:
        if time.perf_counter() - started > 120:
            raise SystemExit("the warm server did not start: see `kb warm status` for its log")
        time.sleep(0.05)
    ready = time.perf_counter() - started
    # Its vectors load in the background after it answers: wait, so that their CPU is not
    # counted into the searches measured below.
    while warm_status(data_dir, warm_dir).get("vectors_in_memory") is False:
        if time.perf_counter() - started > 120:
            raise SystemExit("the warm server's vectors did not load: see its log")
        time.sleep(0.05)
    return ready


def first_calls(data_dir: Path, warm_dir: Path, rounds: int) -> tuple[float, float]:
    """p50 wall ms of a hybrid `kb search` that finds no server (and starts one), and of the
    same search with the warm path off, alternated `rounds` times: what starting a server
    costs the call that starts it."""
    starting = Row("first call", THIS_KB, data_dir, "hybrid", True, "")
    off = Row("warm off", THIS_KB, data_dir, "hybrid", False, "")
    for _ in range(rounds):
        stop_server(data_dir, warm_dir)
        for started in warm_dir.glob("*.started"):
            started.unlink()  # else the client waits out its restart guard
        starting.samples.append(timed(starting, QUERIES[0], warm_dir)[0])
        time.sleep(2)  # let the server finish starting
        stop_server(data_dir, warm_dir)
        off.samples.append(timed(off, QUERIES[0], warm_dir)[0])
    return statistics.median(starting.samples), statistics.median(off.samples)


def stop_server(data_dir: Path, warm_dir: Path) -> None:
    if kb_json(data_dir, environment(True, warm_dir), "warm", "stop")["stopped"]:
        time.sleep(1)  # let it release its lock


def build(kb: Path, data_dir: Path, corpus: list[Path]) -> None:
    if (data_dir / "kb.db").exists() or not corpus:
        return
    print(f"building {data_dir} with {kb} ...", file=sys.stderr)
    command = ["nice", "-n", "5", str(kb), "--data-dir", str(data_dir), "add", *map(str, corpus)]
    subprocess.run(command, check=True, env=environment(False, data_dir))


def chunk_count(data_dir: Path) -> int:
    return kb_json(data_dir, environment(False, data_dir), "stats")["chunks"]


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--data-dir", type=Path, required=True, help="this kb's index")
    parser.add_argument("--base-kb", type=Path, required=True, help="the baseline's kb script")
    parser.add_argument("--base-data-dir", type=Path, required=True, help="its index")
    parser.add_argument("--build", type=Path, nargs="*", default=[], help="corpus to index")
    parser.add_argument("--queries", type=int, default=20, help="queries per row")
    parser.add_argument("--repeat", type=int, default=1, help="passes over the queries")
    parser.add_argument("--warm-dir", type=Path, default=Path("/tmp/h-cli/warm/bench-run"))
    parser.add_argument("--first-calls", type=int, default=6, help="rounds of first calls")
    args = harness.parse(parser, argv)

    build(THIS_KB, args.data_dir, args.build)
    build(args.base_kb, args.base_data_dir, args.build)
    base, this, data = args.base_kb, THIS_KB, args.data_dir
    rows = [
        Row("baseline lexical", base, args.base_data_dir, "lexical", False, "lexical"),
        Row("baseline hybrid", base, args.base_data_dir, "hybrid", False, "hybrid"),
        Row("kb lexical, warm off", this, data, "lexical", False, "lexical"),
        Row("kb hybrid, warm off", this, data, "hybrid", False, "hybrid"),
        Row("kb lexical, warm server", this, data, "lexical", True, "lexical warm"),
        Row("kb hybrid, warm server", this, data, "hybrid", True, "hybrid warm"),
    ]
    stop_server(data, args.warm_dir)  # the start-up below is measured from nothing
    first_ready = start_server(data, args.warm_dir)
    before = warm_status(data, args.warm_dir)
    server_cpu = cpu_ms(before["pid"])
    queries = QUERIES[: args.queries] * args.repeat
    same = 0
    for i, query in enumerate(queries):
        answers = {}
        for row in rows[i % len(rows) :] + rows[: i % len(rows)]:  # rotate the order
            wall, cpu, answers[row.label] = timed(row, query, args.warm_dir)
            row.samples.append(wall)
            row.cpu.append(cpu)
        for mode in ("lexical", "hybrid"):
            same += answers[f"kb {mode}, warm off"] == answers[f"kb {mode}, warm server"]
    server_cpu = cpu_ms(before["pid"]) - server_cpu
    status = warm_status(data, args.warm_dir)
    served = status["requests"] - before["requests"] - 1  # less the first status call
    per_request = server_cpu / max(1, served)
    stop_server(data, args.warm_dir)
    first = first_calls(data, args.warm_dir, args.first_calls) if args.first_calls else None

    print(f"index: {chunk_count(data):,} chunks; {len(queries)} queries per row; each sample a"
          f" fresh `kb search` process; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"warm server: ready {first_ready:.2f} s after the first `kb search` started it;"
          f" it answered {served} of the {2 * len(queries)} warm-row searches, using"
          f" {per_request:.1f} ms CPU each (added to those rows' CPU); its JSON was identical"
          f" to in-process search's (timings aside) for {same} of them")  # fmt: skip
    if first is not None:
        print(f"first call (no server yet: answered in-process, starts one): p50 {first[0]:.0f} ms"
              f" vs {first[1]:.0f} ms with the warm path off ({args.first_calls} rounds,"
              f" alternated)")  # fmt: skip
    print()
    header = (
        f"{'':26} {'p50 ms':>7} {'p95 ms':>7} {'speed-up':>9} {'CPU ms p50':>11}"
        f" {'speed-up':>9} {'target p50':>11}"
    )
    print(f"{'':26} {'wall: fresh process':>25} {'CPU: client (+ server)':>21}")
    print(header)
    print("-" * len(header))
    for row in rows:
        if row.warm:
            row.cpu = [c + per_request for c in row.cpu]
    wall_base = {row.mode: statistics.median(row.samples) for row in rows[:2]}
    cpu_base = {row.mode: statistics.median(row.cpu) for row in rows[:2]}
    for row in rows:
        p50, p95, cpu = (
            statistics.median(row.samples),
            percentile(row.samples, 95),
            statistics.median(row.cpu),
        )
        target = TARGETS[row.target_key]
        verdict = "met" if p50 <= target else "missed"
        print(
            f"{row.label:26} {p50:7.0f} {p95:7.0f} {wall_base[row.mode] / p50:8.2f}x"
            f" {cpu:11.0f} {cpu_base[row.mode] / cpu:8.2f}x {target:6.0f} {verdict}"
        )
    print("\nspeed-up: the baseline's p50 in the same mode / this row's p50")
