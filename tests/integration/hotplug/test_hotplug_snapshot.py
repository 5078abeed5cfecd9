"""Hotplug follows nodes only: started from the projection it takes the nodes and policy
objects, not the pods (issue 16: a role holds what it reads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inplace.core.bus.producer import EventProducer
from inplace.core.settings import Settings
from tests import factories
from tests.integration.conftest import RoleProcess, metric, project_log

pytestmark = pytest.mark.integration


async def test_started_from_the_projection_it_holds_no_pods(
    settings: Settings, producer: EventProducer, projector: RoleProcess, tmp_path: Path
) -> None:
    history = list(factories.cluster_stream(pods=40, resizes_per_pod=1, nodes=4))
    await project_log(settings, producer, projector, history)
    folded = factories.fold(*(e.payload for e in history))
    assert folded.pods and folded.nodes
    others = (
        folded.nodes,
        folded.namespaces,
        folded.resourcequotas,
        folded.limitranges,
        folded.poddisruptionbudgets,
    )
    hotplug = RoleProcess("hotplug", settings, tmp_path / "hotplug.log")
    hotplug.start()
    try:
        await hotplug.ready()
        loaded = await metric(hotplug, 'inplace_read_model_snapshot_objects{role="hotplug"}')
        assert loaded == sum(len(c) for c in others), "the nodes and policy objects, no pod"
        assert "started from the projection" in hotplug.log.read_text()
    finally:
        assert hotplug.stop() == 0
