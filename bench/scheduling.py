"""Scheduling throughput of the pure placement code: N pods onto 1,000 nodes.

No Kafka, no Postgres: the decisions the scheduler's loop will call (`schedule`, then
`SchedulerCache.assume`), timed alone. Pods are built before the clock starts. Runs 10,000 then
50,000 pods on fresh caches and prints pods/s for each: with per-node sums kept incrementally a
decision costs O(nodes) whatever has been placed, so 5x the pods takes about 5x the time, not
25x. Then a KEP-3953 round: pods too big for any node wait, nodes grow, and only the pods the
grown nodes can host are retried. Prints peak memory.

Not a test: `.venv/bin/python -m bench.scheduling [--nodes 1000 --pods 10000 50000]`.
"""

from __future__ import annotations

import argparse
import random
import resource
import time
import tracemalloc
from typing import Any

from schemas.k8s import Node, Pod
from services.scheduler.cache import SchedulerCache
from services.scheduler.placement import Bound, pending_to_retry, schedule

# Node shapes (cpu, memory): a mixed fleet, so scores differ between nodes.
SHAPES = [("32", "128Gi"), ("64", "256Gi"), ("96", "384Gi")]
CPUS = ["100m", "250m", "500m", "1", "2"]
MEMORIES = ["128Mi", "256Mi", "512Mi", "1Gi", "2Gi"]


def make_node(name: str, cpu: str, memory: str) -> Node:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    return Node.from_k8s(
        {
            "metadata": {"name": name},
            "status": {"capacity": allocatable, "allocatable": allocatable},
        }
    )


def make_nodes(count: int) -> list[Node]:
    return [make_node(f"node-{i:04d}", *SHAPES[i % len(SHAPES)]) for i in range(count)]


def make_pod(name: str, rng: random.Random) -> Pod:
    cpu, memory = rng.choice(CPUS), rng.choice(MEMORIES)
    resources = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}}
    spec: dict[str, Any] = {"containers": [{"name": "app", "resources": resources}]}
    if rng.random() < 0.2:  # some pods carry a sidecar (KEP-753 aggregation)
        proxy = {"requests": {"cpu": "50m", "memory": "64Mi"}}
        spec["initContainers"] = [{"name": "proxy", "restartPolicy": "Always", "resources": proxy}]
    return Pod.from_k8s({"metadata": {"name": name, "namespace": "bench"}, "spec": spec})


def make_pods(count: int, seed: int = 1287) -> list[Pod]:
    rng = random.Random(seed)
    return [make_pod(f"pod-{i:06d}", rng) for i in range(count)]


def place(nodes: list[Node], pods: list[Pod]) -> tuple[SchedulerCache, int, float]:
    """Schedule every pod in order on a fresh cache; (cache, pods bound, seconds)."""
    cache = SchedulerCache()
    for node in nodes:
        cache.upsert_node(node)
    bound = 0
    started = time.perf_counter()
    for pod in pods:
        outcome = schedule(cache, pod)
        if isinstance(outcome, Bound):
            cache.assume(pod, outcome.node_name)
            bound += 1
        else:
            cache.mark_unschedulable(pod)
    return cache, bound, time.perf_counter() - started


def hotplug_round(cache: SchedulerCache, nodes: list[Node], waiting: int) -> None:
    """KEP-3953: `waiting` pods too big for any node wait; 10% of the nodes double in size."""
    rng = random.Random(3953)
    big = [
        Pod.from_k8s(
            {
                "metadata": {"name": f"big-{i:05d}", "namespace": "bench"},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "resources": {"requests": {"cpu": str(rng.choice([100, 120]))}},
                        }
                    ]
                },
            }
        )
        for i in range(waiting)
    ]
    started = time.perf_counter()
    for pod in big:
        assert not isinstance(schedule(cache, pod), Bound)
        cache.mark_unschedulable(pod)
    marked = time.perf_counter() - started

    started = time.perf_counter()
    retried = placed = 0
    grown_nodes = nodes[::10]
    for node in grown_nodes:
        cpu = (node.status.allocatable or {})["cpu"].value() * 2
        change = cache.upsert_node(make_node(node.metadata.name or "", str(cpu), "1Ti"))
        if change is None:
            continue
        for key in pending_to_retry(cache, change):
            retried += 1
            pending = cache.pending(key)
            assert pending is not None
            outcome = schedule(cache, pending.pod)
            if isinstance(outcome, Bound):
                cache.assume(pending.pod, outcome.node_name)
                placed += 1
            else:
                cache.mark_unschedulable(pending.pod)
    grown = time.perf_counter() - started
    print(
        f"hotplug: {waiting:,} pods unschedulable in {marked:.2f}s; {len(grown_nodes)} nodes "
        f"grew → {retried:,} retried, {placed:,} placed, {cache.pending_count():,} still "
        f"pending, in {grown * 1000:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--waiting", type=int, default=1000, help="pods in the hotplug round")
    args = parser.parse_args()

    nodes = make_nodes(args.nodes)
    runs: list[tuple[int, float]] = []
    cache = SchedulerCache()
    for count in args.pods:
        pods = make_pods(count)
        cache, bound, seconds = place(nodes, pods)
        runs.append((count, seconds))
        print(
            f"{count:>7,} pods on {args.nodes:,} nodes: {bound:,} bound in {seconds:.2f}s = "
            f"{count / seconds:,.0f} pods/s ({seconds / count * 1e6:.0f} µs/pod)"
        )
    if len(runs) > 1:
        (small, t_small), (large, t_large) = runs[0], runs[-1]
        print(
            f"{large / small:.0f}x the pods took {t_large / t_small:.1f}x the time "
            f"(quadratic would be {(large / small) ** 2:.0f}x)"
        )
    hotplug_round(cache, nodes, args.waiting)

    # The cache's own footprint: replay the last run's placements into a fresh cache under
    # tracemalloc (re-running the decisions traced would take minutes and measure the same).
    placements = [(key, cache.placed_node(key)) for key in cache.placed_keys()]
    by_key = {f"bench/{pod.metadata.name}": pod for pod in make_pods(args.pods[-1])}
    tracemalloc.start()
    replayed = SchedulerCache()
    for node in nodes:
        replayed.upsert_node(node)
    for key, node_name in placements:
        if key in by_key and node_name is not None:
            replayed.assume(by_key[key], node_name)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"cache with {args.nodes:,} nodes and {len(placements):,} pods holds "
        f"{held / 2**20:.1f} MiB (peak {peak / 2**20:.1f} MiB while building)"
    )
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {peak_rss:.0f} MiB")


if __name__ == "__main__":
    main()
