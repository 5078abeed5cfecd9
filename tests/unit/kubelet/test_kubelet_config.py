"""The kubelet process takes its read model's fetch behaviour from its own configuration."""

from __future__ import annotations

from inplace.core.settings import Settings
from services.kubelet.config import KubeletConfig
from services.kubelet.kubelet import Kubelet
from services.kubelet.runtime_fake import FakeRuntime


async def test_held_fetches_are_off_by_default_and_set_from_the_config() -> None:
    # A resize waits on the kubelet: it fetches promptly unless told to hold fetches
    # (INPLACE_KUBELET_FETCH_WAIT_MS), trading latency for CPU under an open-loop load.
    assert Kubelet(Settings(), FakeRuntime(), KubeletConfig()).model.fetch_wait_ms == 0
    held = Kubelet(Settings(), FakeRuntime(), KubeletConfig(fetch_wait_ms=5))
    assert held.model.fetch_wait_ms == 5
