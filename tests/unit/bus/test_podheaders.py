"""The headers writers put on pod records so readers can skip others' records unparsed."""

from __future__ import annotations

from inplace.core.bus.podheaders import node_of, pod_headers
from inplace.core.projection.podstore import PodStore, pod_json
from schemas import events as ev
from schemas.k8s import OwnerReference
from services.workload.ownership import controlled
from tests import factories


def test_the_node_header_comes_from_the_event_or_the_writers_view_of_the_pod() -> None:
    state = factories.fold(
        ev.PodCreated(namespace="a", name="p", uid="u", pod=factories.pod("a", "p")),
        ev.PodBound(namespace="a", name="p", uid="u", node_name="node-1"),
    )
    resize = ev.ResizeProposed(namespace="a", name="p", uid="u", containers=[])
    assert node_of(ev.PodBound(namespace="a", name="q", uid="v", node_name="n"), {}) == "n"
    assert node_of(resize, state.pods) == "node-1"
    assert node_of(resize, {}) is None  # unknown pod: no header, everyone decodes it
    created = ev.PodCreated(namespace="a", name="q", uid="v", pod=factories.pod("a", "q"))
    assert node_of(created, {}) == ""
    assert node_of(ev.NodeDeleted(name="node-1"), state.pods) is None


def test_the_controller_header_names_the_controlling_owners_kind() -> None:
    owned = factories.pod("a", "web-1")
    owned.metadata.owner_references = [
        OwnerReference(
            api_version="apps.inplace.dev/v1alpha1",
            kind="CloneSet",
            name="web",
            uid="cs",
            controller=True,
        )
    ]
    state = factories.fold(
        ev.PodCreated(namespace="a", name="web-1", uid="u1", pod=owned),
        ev.PodCreated(namespace="a", name="plain", uid="u2", pod=factories.pod("a", "plain")),
    )
    resize = ev.ResizeProposed(namespace="a", name="web-1", uid="u1", containers=[])
    plain = ev.ResizeProposed(namespace="a", name="plain", uid="u2", containers=[])
    assert pod_headers(resize, state.pods) == {"node": "", "controller": "CloneSet"}
    assert pod_headers(plain, state.pods) == {"node": "", "controller": ""}
    assert pod_headers(ev.PodCreated(namespace="a", name="web-1", uid="u1", pod=owned), {}) == {
        "node": "",
        "controller": "CloneSet",
    }
    assert pod_headers(resize, {}) == {}  # unknown pod: no headers, every reader decodes it
    assert pod_headers(ev.NodeDeleted(name="n"), state.pods) == {}
    # The workload controller decodes CloneSet pods and headerless records only.
    assert controlled("CloneSet") and controlled(None)
    assert not controlled("") and not controlled("ReplicaSet")


def test_a_pod_store_gives_the_headers_from_its_facts_as_decoded_pods_give_them() -> None:
    """Writers hold their pods in a PodStore: node and controller come from the facts it keeps
    (a snapshot row's controller is found once, on demand), equal to the decoded pods'."""
    owned = factories.pod("a", "web-1")
    owned.metadata.owner_references = [
        OwnerReference(api_version="v1", kind="CloneSet", name="web", uid="cs", controller=True)
    ]
    payloads = [
        *(env.payload for env in factories.every_type_stream()),
        *(env.payload for env in factories.scoped_pods_stream()),
        ev.PodCreated(namespace="a", name="web-1", uid="u1", pod=owned),
        ev.ResizeProposed(namespace="a", name="web-1", uid="u1", containers=[]),
    ]
    plain = factories.fold(*payloads)
    stored = PodStore(hot=2)
    for key in plain.pods:  # as a snapshot loads them: JSON rows, controller not known yet
        pod = plain.pods[key]
        stored.put_json(key, pod_json(pod), rv=0, node=pod.spec.node_name or "")
    seen = set()
    for payload in payloads:
        headers = pod_headers(payload, stored)
        assert headers == pod_headers(payload, plain.pods), payload
        seen.add(headers.get("controller"))
    assert {"CloneSet", ""} <= seen
