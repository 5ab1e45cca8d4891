"""The Ray driver's stall limit (`ingestion.ray_stall_s`), on a stand-in for Ray's futures: which
actor is killed, when, and which files pay an attempt for it. The real cluster is in
tests/ingest/test_ray_executor.py (an actor frozen with SIGSTOP); this pins the scheduling itself,
including while the other actors keep answering."""

from __future__ import annotations

import time
import types
from collections import deque
from pathlib import Path

import pytest

import kb_search.ingest.ray_executor as rx
from kb_search.executor_choice import ExecutorChoice
from kb_search.ingest.executor import AddOptions
from kb_search.ingest.workers import Outcome


class ActorDied(Exception):
    pass


class Call:
    def __init__(self, actor: Actor, key: int, due: float) -> None:
        self.actor, self.key, self.due = actor, key, due


class Actor:
    """Runs its calls one at a time, `delay` s each; a call on a `poison` key never ends."""

    def __init__(self, delay: float, poison: frozenset[int] = frozenset()) -> None:
        self.delay, self.poison, self.dead = delay, poison, False
        self.free_at = time.monotonic()
        self.calls = 0
        self.process = types.SimpleNamespace(remote=self._call)

    def _call(self, key: int, name: str, data: bytes, known: list[str]) -> Call:
        self.calls += 1
        start = max(time.monotonic(), self.free_at)
        self.free_at = float("inf") if key in self.poison else start + self.delay
        return Call(self, key, self.free_at)


class FakeRay:
    exceptions = types.SimpleNamespace(RayActorError=ActorDied, RayError=RuntimeError)

    def __init__(self) -> None:
        self.kills: list[tuple[float, Actor]] = []

    def wait(self, refs: list[Call], num_returns: int = 1, timeout: float | None = None):
        end = time.monotonic() + (timeout or 0)
        while True:
            ready = [r for r in refs if r.actor.dead or time.monotonic() >= r.due]
            if ready or time.monotonic() >= end:
                return ready[:num_returns], []
            time.sleep(0.002)

    def get(self, ref: Call):
        if ref.actor.dead:
            raise ActorDied("actor died")
        return Outcome(ref.key, "ok"), {}

    def kill(self, actor: Actor, no_restart: bool = True) -> None:
        if not actor.dead:
            self.kills.append((time.monotonic(), actor))
        actor.dead = True


class Workers:
    def __init__(self, actors: list[Actor], make) -> None:
        self.actors, self.make = actors, make

    def replace(self, slot: int, dead: Actor) -> Actor:
        if self.actors[slot] is dead:
            dead.dead = True
            self.actors[slot] = self.make()
        return self.actors[slot]


def run(actors: list[Actor], tasks: list[rx._Task], stall_s: float, make=None):
    executor = rx.RayExecutor(
        None, AddOptions(executor=ExecutorChoice("ray", {"stall_s": stall_s})), lambda: None
    )
    executor._known = lambda task: []
    ray = FakeRay()
    workers = Workers(actors, make or (lambda: Actor(0.005)))
    started = time.monotonic()
    outcomes = list(executor._stream(ray, workers, deque(tasks), None))
    kills = [(when - started, actor) for when, actor in ray.kills]
    return {o.key: o for o in outcomes}, kills, time.monotonic() - started


@pytest.fixture(autouse=True)
def quick_ticks(monkeypatch):
    monkeypatch.setattr(rx, "WAIT_TICK_S", 0.02)


def tasks(keys, attempt: int = 1) -> list[rx._Task]:
    return [rx._Task(k, Path(__file__), str(k), attempt=attempt) for k in keys]


def test_a_frozen_actor_is_killed_while_the_others_keep_answering():
    frozen = Actor(0.01, poison=frozenset({0}))
    replacements: list[Actor] = []

    def make() -> Actor:
        replacements.append(Actor(0.01))
        return replacements[-1]

    outcomes, kills, _ = run([frozen, Actor(0.01)], tasks(range(120)), stall_s=0.3, make=make)
    assert [actor for _, actor in kills] == [frozen]
    assert kills[0][0] < 0.8  # at the limit (the healthy actor alone needs ~1.2 s for all)
    # killed while files were still queued: its replacement took a share of them, not only
    # the two the frozen actor held
    assert len(replacements) == 1 and replacements[0].calls > 10
    assert len(outcomes) == 120 and all(o.status == "ok" for o in outcomes.values())


def test_only_the_file_it_was_on_pays_an_attempt():
    frozen = Actor(0.01, poison=frozenset({1}))
    # file 2 waits behind the frozen call on its last attempt: it must not fail for it
    queued = [*tasks([1]), *tasks([2], attempt=rx.ATTEMPTS)]
    outcomes, kills, _ = run([frozen], queued, stall_s=0.2)
    assert len(kills) == 1
    assert outcomes[1].status == "ok" and outcomes[2].status == "ok"


def test_a_file_that_freezes_every_worker_fails_with_the_reason():
    poison = frozenset({7})
    outcomes, kills, _ = run(
        [Actor(0.01, poison)], tasks([5, 7, 9]), stall_s=0.1, make=lambda: Actor(0.01, poison)
    )
    assert len(kills) == rx.ATTEMPTS
    assert outcomes[7].status == "error" and "silent for 0.1 s, 3 times" in outcomes[7].reason
    assert outcomes[5].status == "ok" and outcomes[9].status == "ok"


def test_no_limit_kills_nothing_however_slow():
    outcomes, kills, _ = run([Actor(0.15)], tasks(range(3)), stall_s=0)
    assert kills == [] and all(o.status == "ok" for o in outcomes.values())
    _, kills, _ = run([Actor(0.15)], tasks(range(3)), stall_s=0.05)
    assert kills  # the same actor under a limit it exceeds: the limit is wall time
