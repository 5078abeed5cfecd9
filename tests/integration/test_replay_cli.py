"""`inplace replay …` as a user runs it, against a live projection on the real servers."""

from __future__ import annotations

import json
import socket

import yaml

from inplace.core.bus.producer import EventProducer
from inplace.core.projection.reducers import resource_version
from inplace.core.settings import Settings
from schemas import events as ev
from schemas.envelope import Envelope
from schemas.usage import USAGE
from tests import factories
from tests.integration.conftest import RoleProcess, inplace, wait_caught_up


def test_topics_prints_one_row_per_topic_in_every_format(settings: Settings) -> None:
    rows = [
        json.loads(line) for line in inplace(settings, "topics", "-o", "json").stdout.splitlines()
    ]
    assert {r["topic"] for r in rows} == set(settings.event_topics()) | {
        settings.topic(ev.DEAD_LETTER),
        settings.topic(USAGE),
    }
    assert {r["state"] for r in rows} == {"exists"}  # the fixture made them
    assert rows[0]["partitions"] == settings.pods_partitions
    table = inplace(settings, "topics").stdout.splitlines()
    assert table[0].split() == ["TOPIC", "PARTITIONS", "STATE"]


async def test_rebuild_history_and_state_at(
    settings: Settings, producer: EventProducer, projector: RoleProcess
) -> None:
    stream = list(factories.cluster_stream(pods=12, resizes_per_pod=2, nodes=3))
    positions = await producer.publish_many(stream)
    projector.start()
    await wait_caught_up(settings, projector)

    # rebuild == live
    rebuilt = inplace(settings, "replay", "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    checksums = [ln.split()[-1] for ln in rebuilt.stdout.splitlines() if "checksum" in ln]
    assert len(checksums) == 2 and checksums[0] == checksums[1]
    assert "match" in rebuilt.stdout
    live = inplace(settings, "replay", "checksum")
    assert live.returncode == 0 and live.stdout.split()[0] == checksums[0]

    # history: web-1's events in log order with their correlation ids
    mine = [(e, p) for e, p in zip(stream, positions, strict=True) if e.key == "team-a/web-1"]
    history = inplace(settings, "replay", "history", "team-a/web-1")
    assert history.returncode == 0, history.stderr
    shown = [ln for ln in history.stdout.splitlines() if any(t in ln for t in ev.event_types())]
    assert len(shown) == len(mine)
    for line, (env, pos) in zip(shown, mine, strict=True):
        assert env.type in line and str(pos.offset) in line
        assert env.correlation_id in line

    # Piped into a narrow "terminal", nothing is cut: grep finds every event type whole.
    narrow = inplace(settings, "replay", "history", "team-a/web-1", COLUMNS="40")
    words = [ln.split() for ln in narrow.stdout.splitlines()[1:]]
    types = set(ev.event_types())
    assert [next(t for t in w if t in types) for w in words] == [e.type for e, _ in mine]
    assert all(
        e.correlation_id in ln
        for (e, _), ln in zip(mine, narrow.stdout.splitlines()[1:], strict=True)
    )
    lines = inplace(settings, "replay", "history", "team-a/web-1", "-o", "json").stdout.splitlines()
    parsed = [json.loads(line) for line in lines]
    assert [(p["event"], p["offset"], p["correlation_id"]) for p in parsed] == [
        (e.type, pos.offset, e.correlation_id) for e, pos in mine
    ]
    as_yaml = yaml.safe_load(
        inplace(settings, "replay", "history", "team-a/web-1", "-o", "yaml").stdout
    )
    assert [r["event"] for r in as_yaml] == [e.type for e, _ in mine]
    summary = json.loads(inplace(settings, "replay", "checksum", "-o", "json").stdout)
    assert summary["checksum"] == checksums[0] and summary["counts"]["pods"] > 0
    bad = inplace(settings, "replay", "checksum", "-o", "xml")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--output" in bad.stderr

    # state --at: right after web-1's first ResizeProposed, spec is the proposal and
    # status.resize is Proposed; just before it, the original resources.
    first = next(i for i, (e, _) in enumerate(mine) if isinstance(e.payload, ev.ResizeProposed))
    proposal = mine[first][0].payload
    assert isinstance(proposal, ev.ResizeProposed)
    at = mine[first][1]
    before = mine[first - 1][1]

    def pod_at(offset: int, partition: int) -> dict[str, object]:
        done = inplace(
            settings, "replay", "state", "--at", f"pods:{partition}:{offset}", "-o", "json"
        )
        assert done.returncode == 0, done.stderr
        pods = json.loads(done.stdout)["pods"]
        return next(p for p in pods if p["metadata"]["name"] == "web-1")

    after_pod = pod_at(at.offset, at.partition)
    want_cpu = str(proposal.containers[0].resources.requests["cpu"])
    assert after_pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == want_cpu
    assert after_pod["status"]["resize"] == "Proposed"
    state_yaml = inplace(
        settings, "replay", "state", "--at", f"pods:{at.partition}:{at.offset}", "-o", "yaml"
    )
    assert any(p["metadata"]["name"] == "web-1" for p in yaml.safe_load(state_yaml.stdout)["pods"])
    before_pod = pod_at(before.offset, before.partition)
    assert before_pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "100m"
    assert "resize" not in before_pod["status"]

    # state --at piped into a narrow "terminal": plain columns, every cell whole.
    narrow_state = inplace(
        settings, "replay", "state", "--at", f"pods:{at.partition}:{at.offset}", COLUMNS="40"
    )
    assert narrow_state.returncode == 0, narrow_state.stderr
    assert "…" not in narrow_state.stdout
    container = proposal.containers[0].name
    web_row = next(
        ln.split()
        for ln in narrow_state.stdout.splitlines()
        if ln.startswith(f"team-a/web-1[{container}]")
    )
    desired = json.loads(next(cell for cell in web_row if cell.startswith("{")))
    assert desired["requests"]["cpu"] == want_cpu and "Proposed" in web_row
    assert any(ln.split()[:1] == ["NODE"] for ln in narrow_state.stdout.splitlines())


async def test_replay_bad_input_is_one_line_and_non_zero(settings: Settings) -> None:
    cases = [
        (("replay", "state", "--at", "nope"), "is not <topic>:<partition>:<offset>"),
        (("replay", "state", "--at", "secrets:0:1"), "topic must be one of"),
        (("replay", "state", "--at", "pods:0:999999"), "past the end of the log"),
        (("replay", "history", "no-slash"), "is not <namespace>/<name>"),
        (("replay", "history", "team-a/ghost"), "no events for pod team-a/ghost"),
        (("serve", "nonsense"), "unknown role 'nonsense'"),
    ]
    for args, message in cases:
        done = inplace(settings, *args)
        assert done.returncode != 0, args
        assert message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr + done.stdout
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


async def test_serve_on_a_taken_port_is_one_line_and_non_zero(settings: Settings) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = inplace(settings, "serve", "quota", "--port", str(port))
    assert done.returncode == 1
    assert f"quota: cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


async def test_replay_against_unreachable_servers_fails_cleanly(settings: Settings) -> None:
    down = settings.model_copy(update={"postgres_dsn": "postgresql://postgres@127.0.0.1:1/none"})
    done = inplace(down, "replay", "checksum")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


async def test_history_marks_an_update_the_log_refused(
    settings: Settings, producer: EventProducer
) -> None:
    """Two replicas' label updates decided from one version: the second on the log is folded
    to nothing, and the history says so instead of showing it as a change."""
    pod = factories.pod("team-z", "web")
    created = await producer.publish(
        Envelope.wrap(
            ev.PodCreated(namespace="team-z", name="web", uid="u", pod=pod), producer="apiserver"
        )
    )
    read = str(resource_version(created))
    for by in ("a", "b"):
        update = ev.PodUpdated(
            namespace="team-z", name="web", uid="u", labels={"by": by}, precondition=read
        )
        await producer.publish(Envelope.wrap(update, producer="apiserver"))
    lines = inplace(settings, "replay", "history", "team-z/web", "-o", "json").stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    assert [(r["event"], r["refused"]) for r in rows] == [
        ("PodCreated", False), ("PodUpdated", False), ("PodUpdated", True),
    ]  # fmt: skip
    table = inplace(settings, "replay", "history", "team-z/web").stdout.splitlines()
    assert ["PodUpdated (refused)" in line for line in table[1:]] == [False, False, True]
