"""The kubelet role: admission, allocation checkpoint, CRI actuation and restart tolerance for
the simulated nodes this process hosts (issue 5). See `kubelet.py` and `nodeagent.py`."""

from __future__ import annotations

from inplace.core.service import RoleServer
from inplace.core.settings import Settings
from schemas.events import NODES, PODS
from services.kubelet.config import KubeletConfig
from services.kubelet.kubelet import Kubelet, open_runtime

ROLE = "kubelet"
INPUT_TOPICS = (PODS, NODES)


async def run(settings: Settings, *, host: str, port: int) -> None:
    config = KubeletConfig()
    async with open_runtime(settings, config) as runtime:
        kubelet = Kubelet(settings, runtime, config)
        server = RoleServer(ROLE, settings, host=host, port=port, ready=lambda: kubelet.ready)
        await server.run({"kubelet": kubelet.run})
