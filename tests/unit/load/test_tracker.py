"""The tracker's maths on synthetic envelopes: milestones per correlation id, stage latencies
from envelope times, outcomes, counts, percentiles, and the log half of the chaos verdict."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from inplace.load.chaos import Chaos, Kill, _role_of, chaos_check, log_checks
from inplace.load.report import stages_of, throughput
from inplace.load.tracker import Tracker, percentile, signature, stage_stats
from schemas import events as ev
from schemas.envelope import Envelope, EventPayload
from schemas.k8s import ResourceRequirements
from tests import factories

T0 = datetime(2025, 1, 1, tzinfo=UTC)
NS = "load-t"
IDS = {"namespace": NS, "uid": "u"}


def _rr(cpu: str, memory: str = "128Mi") -> ResourceRequirements:
    rl = {"cpu": cpu, "memory": memory}
    return ResourceRequirements.model_validate({"requests": rl, "limits": rl})


def _env(payload: EventPayload, cid: str, ms: float) -> Envelope:
    return Envelope.wrap(
        payload, producer="test", correlation_id=cid, time=T0 + timedelta(milliseconds=ms)
    )


def proposed(pod: str, cid: str, ms: float, cpu: str = "200m") -> Envelope:
    return _env(
        ev.ResizeProposed(
            name=pod, **IDS, containers=[ev.ContainerResources(name="app", resources=_rr(cpu))]
        ),
        cid,
        ms,
    )


def allocated(pod: str, cid: str, ms: float, cpu: str = "200m") -> Envelope:
    return _env(
        ev.Allocated(
            name=pod,
            **IDS,
            node_name="n",
            containers=[ev.ContainerAllocation(name="app", resources=_rr(cpu))],
        ),
        cid,
        ms,
    )


def actuated(pod: str, cid: str, ms: float, cpu: str = "200m") -> Envelope:
    return _env(
        ev.Actuated(
            name=pod,
            **IDS,
            node_name="n",
            containers=[ev.ContainerActual(name="app", resources=_rr(cpu))],
        ),
        cid,
        ms,
    )


def status(pod: str, cid: str, ms: float, resize: str | None) -> Envelope:
    return _env(ev.ResizeStatusChanged(name=pod, **IDS, resize=resize), cid, ms)  # type: ignore[arg-type]


def completed(tracker: Tracker, pod: str, cid: str, t: float, cpu: str = "200m") -> None:
    for env in (
        proposed(pod, cid, t, cpu),
        allocated(pod, cid, t + 10, cpu),
        status(pod, cid, t + 12, "InProgress"),
        actuated(pod, cid, t + 20, cpu),
        status(pod, cid, t + 30, None),
    ):
        tracker.observe(env, env.time.timestamp() + 0.005)


def test_a_completed_resize_has_every_stage_from_envelope_times() -> None:
    settled: list[tuple[str, str]] = []
    tracker = Tracker("run-r", NS, on_settled=lambda cid, o: settled.append((cid, o)))
    completed(tracker, "p-0", "run-r0", 0)
    trace = tracker.traces["run-r0"]
    assert trace.outcome == "completed"
    assert trace.actual == trace.desired
    assert trace.latency("admit") == pytest.approx(0.010, abs=1e-6)
    assert trace.latency("actuate") == pytest.approx(0.010, abs=1e-6)
    assert trace.latency("clear") == pytest.approx(0.010, abs=1e-6)
    assert trace.latency("end_to_end") == pytest.approx(0.020, abs=1e-6)
    assert trace.latency("complete") == pytest.approx(0.030, abs=1e-6)
    assert trace.latency("defer") is None
    assert settled == [("run-r0", "completed")]
    assert tracker.delays == pytest.approx([0.005] * 5, abs=1e-6)


def test_statuses_set_with_the_allocation_and_the_actuation_mark_their_stages() -> None:
    """The kubelet writes InProgress with Allocated and the cleared status with Actuated."""
    tracker = Tracker("run-r", NS)
    start = allocated("p-0", "run-r0", 10)
    start.payload.resize_status = ev.ResizeStatusUpdate(resize="InProgress")  # type: ignore[union-attr]
    done = actuated("p-0", "run-r0", 25)
    done.payload.resize_status = ev.ResizeStatusUpdate(resize=None)  # type: ignore[union-attr]
    for env in (proposed("p-0", "run-r0", 0), start, done):
        tracker.observe(env, env.time.timestamp())
    trace = tracker.traces["run-r0"]
    assert trace.outcome == "completed"
    assert trace.latency("admit") == pytest.approx(0.010, abs=1e-6)
    assert trace.latency("end_to_end") == pytest.approx(0.025, abs=1e-6)
    assert trace.latency("complete") == pytest.approx(0.025, abs=1e-6)
    assert trace.counts["in_progress"] == 1 and trace.counts["cleared"] == 1


def test_an_allocation_applied_first_marks_every_milestone_in_one_record() -> None:
    tracker = Tracker("run-r", NS)
    proposed_, applied = factories.applied_in_one_flow(NS, "p-0", "n", "200m", "128Mi")
    for payload, ms in ((proposed_, 0), (applied, 15)):
        env = _env(payload, "run-r0", ms)
        tracker.observe(env, env.time.timestamp())
    trace = tracker.traces["run-r0"]
    assert trace.outcome == "completed" and trace.actual == trace.desired
    assert trace.latency("admit") == pytest.approx(0.015, abs=1e-6)
    assert trace.latency("end_to_end") == pytest.approx(0.015, abs=1e-6)
    assert trace.latency("actuate") == 0.0
    assert trace.counts["allocated"] == trace.counts["actuated"] == trace.counts["cleared"] == 1
    assert "in_progress" not in trace.times


def test_deferred_and_infeasible_settle_without_allocation() -> None:
    tracker = Tracker("run-r", NS)
    tracker.observe(proposed("p-1", "run-r1", 0, "30"))
    tracker.observe(status("p-1", "run-r1", 7, "Deferred"))
    tracker.observe(proposed("p-2", "run-r2", 0, "40"))
    tracker.observe(status("p-2", "run-r2", 4, "Infeasible"))
    assert tracker.traces["run-r1"].outcome == "deferred"
    assert tracker.traces["run-r1"].latency("defer") == pytest.approx(0.007, abs=1e-6)
    assert tracker.traces["run-r2"].outcome == "infeasible"
    assert tracker.traces["run-r2"].latency("infeasible") == pytest.approx(0.004, abs=1e-6)
    # A Deferred resize accepted later counts as completed.
    tracker.observe(allocated("p-1", "run-r1", 50, "30"))
    tracker.observe(actuated("p-1", "run-r1", 60, "30"))
    tracker.observe(status("p-1", "run-r1", 70, None))
    assert tracker.traces["run-r1"].outcome == "completed"


def test_end_to_end_stops_at_the_actuation_that_reaches_the_desired_resources() -> None:
    tracker = Tracker("run-r", NS)
    tracker.observe(proposed("p-0", "run-r0", 0, "500m"))
    tracker.observe(allocated("p-0", "run-r0", 5, "500m"))
    tracker.observe(actuated("p-0", "run-r0", 8, "300m"))  # part way (e.g. a failed step)
    assert "actuated" not in tracker.traces["run-r0"].times
    tracker.observe(actuated("p-0", "run-r0", 40, "500m"))
    tracker.observe(status("p-0", "run-r0", 41, None))
    trace = tracker.traces["run-r0"]
    assert trace.latency("end_to_end") == pytest.approx(0.040, abs=1e-6)
    assert trace.counts["actuated"] == 2


def test_other_runs_and_other_events_are_ignored_but_pod_phases_are_followed() -> None:
    tracker = Tracker("run-r", NS)
    tracker.observe(proposed("p-0", "other-run-r0", 0))
    tracker.observe(proposed("p-0", "some-uuid", 0))
    tracker.observe(_env(ev.PodPhaseChanged(name="p-0", **IDS, phase="Running"), "x", 1))
    tracker.observe(
        _env(ev.PodPhaseChanged(name="p-1", **IDS, phase="Failed", reason="OutOfcpu"), "x", 1)
    )
    tracker.observe(
        _env(ev.PodPhaseChanged(name="q", namespace="else", uid="u", phase="Running"), "x", 1)
    )
    assert tracker.traces == {}
    assert tracker.running == {f"{NS}/p-0"}
    assert tracker.failed == {f"{NS}/p-1": "OutOfcpu"}


def test_outcome_counts_and_stage_stats_add_up() -> None:
    tracker = Tracker("run-r", NS)
    for i in range(10):
        completed(tracker, f"p-{i}", f"run-r{i}", i * 100)
    tracker.observe(proposed("p-10", "run-r10", 1000, "30"))
    tracker.observe(status("p-10", "run-r10", 1001, "Deferred"))
    tracker.observe(proposed("p-11", "run-r11", 1000, "40"))
    tracker.observe(status("p-11", "run-r11", 1002, "Infeasible"))
    tracker.observe(proposed("p-12", "run-r12", 1000))  # nothing yet
    outcomes = tracker.outcomes()
    assert outcomes == {"completed": 10, "deferred": 1, "infeasible": 1, "pending": 1}
    assert sum(outcomes.values()) == len(tracker.proposed()) == 13
    stages = stages_of(tracker, [0.1, 0.2])
    assert stages["request"].count == 2
    for name in ("admit", "actuate", "clear", "end_to_end", "complete"):
        assert stages[name].count == 10
    assert stages["end_to_end"].p50 == pytest.approx(0.020, abs=1e-6)
    assert (stages["defer"].count, stages["infeasible"].count) == (1, 1)
    rate = throughput(tracker)
    assert rate["window_s"] == pytest.approx(
        1.002, abs=1e-6
    )  # first proposal → last settling event
    assert rate["completed_per_s"] == pytest.approx(10 / 1.002, rel=0.01)


def test_a_newer_proposal_supersedes_a_pending_one() -> None:
    tracker = Tracker("run-r", NS)
    tracker.observe(proposed("p-0", "run-r0", 0, "300m"))
    tracker.observe(proposed("p-0", "run-r1", 1, "400m"))
    assert tracker.traces["run-r0"].outcome == "superseded"
    assert tracker.traces["run-r1"].outcome == "pending"


def test_percentiles_interpolate_like_numpy() -> None:
    assert percentile([], 0.5) == 0.0
    assert percentile([3.0], 0.99) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == pytest.approx(2.5)
    values = [float(i) for i in range(1, 101)]
    s = stage_stats(reversed(values))
    assert (s.count, s.max, s.mean) == (100, 100.0, 50.5)
    assert s.p50 == pytest.approx(50.5)
    assert s.p90 == pytest.approx(90.1)
    assert s.p99 == pytest.approx(99.01)
    assert s.as_ms()["p99_ms"] == pytest.approx(99010.0)


def test_signatures_compare_quantities_by_value() -> None:
    a = signature([("app", _rr("0.5", "1Gi"))])
    b = signature([("app", _rr("500m", "1024Mi"))])
    assert a == b
    assert a != signature([("app", _rr("501m", "1Gi"))])


def test_the_log_verdict_catches_lost_and_duplicated_transitions() -> None:
    good = Tracker("run-r", NS)
    completed(good, "p-0", "run-r0", 0)
    good.observe(proposed("p-1", "run-r1", 0, "30"))
    good.observe(status("p-1", "run-r1", 5, "Deferred"))
    assert all(c.ok for c in log_checks(good))

    bad = Tracker("run-r", NS)
    completed(bad, "p-0", "run-r0", 0)
    bad.observe(allocated("p-0", "run-r0", 50))  # a second Allocated
    bad.observe(proposed("p-1", "run-r1", 0))  # never finished
    bad.observe(proposed("p-2", "run-r2", 0, "300m"))
    bad.observe(allocated("p-2", "run-r2", 1, "300m"))
    bad.observe(actuated("p-2", "run-r2", 2, "250m"))  # cleared with actual != desired
    bad.observe(status("p-2", "run-r2", 3, None))
    failed = {c.name for c in log_checks(bad) if not c.ok}
    assert failed == {
        "every injected resize reached a final state",
        "at most one Allocated per proposal",
        "completed resizes: actual == desired",
    }


def test_role_processes_are_recognised_by_their_command_line() -> None:
    python = "/work/main/.venv/bin/python3"
    assert _role_of([python, "-m", "inplace.cli.main", "serve", "kubelet", "--port", "8083"]) == (
        "kubelet",
        8083,
    )
    assert _role_of([python, "/x/.venv/bin/inplace", "serve", "apiserver", ""]) == (
        "apiserver",
        None,
    )
    assert _role_of([python, "-m", "inplace.cli.main", "up", ""]) is None
    assert _role_of([python, "-m", "pytest", "serve"]) is None


def test_a_chaos_run_without_a_kill_does_not_pass() -> None:
    chaos = Chaos("127.0.0.1:9092", "", interval=5.0)
    idle = chaos_check(chaos)
    assert not idle.ok and "no role was killed" in idle.detail and "every 5s" in idle.detail
    chaos.kills += [Kill(1.0, "kubelet", 10), Kill(2.0, "apiserver", 11), Kill(3.0, "kubelet", 12)]
    done = chaos_check(chaos)
    assert done.ok and done.detail == "3 SIGKILLs: apiserver x1, kubelet x2"


def test_the_tracker_reads_only_the_types_it_follows_and_misses_nothing() -> None:
    """`follow` skips every other `pods` record undecoded: traces, phases and counts are those
    of a tracker that observed everything."""
    from inplace.core.bus.headers import of_types
    from inplace.load.tracker import TRACKED
    from tests import factories

    stream = [
        *factories.cluster_stream(pods=20, resizes_per_pod=3, nodes=2),
        *factories.every_type_stream(),
    ]
    raw = factories.raw_records(stream, [ev.PODS])
    pods = [env for env in stream if env.topic == ev.PODS]
    accept = of_types(TRACKED)
    full, filtered = Tracker("", "team-a"), Tracker("", "team-a")
    for env, record in zip(pods, raw, strict=True):
        full.observe(env, 0.0)
        if accept(record):
            filtered.observe(env, 0.0)
    assert len(raw) > sum(accept(r) for r in raw)  # something was skipped
    assert full.failed and full.running and full.outcomes()["completed"]  # not vacuous
    assert filtered.traces == full.traces and filtered.current == full.current
    assert (filtered.running, filtered.failed) == (full.running, full.failed)
    assert (filtered.events, filtered.delays) == (full.events, full.delays)
