"""End-to-end resize throughput and latency: Proposed → Allocated → Actuated, all roles.

Starts its own local cluster (Kafka, PostgreSQL and every role, as `inplace up` does) in a
temporary directory on free ports, runs `inplace load` against it through the library, prints
resizes/s and the latency percentiles per stage, and stops everything. Not a test.

    .venv/bin/python -m bench.e2e_resize --nodes 100 --pods 2000 --resizes 5000
    .venv/bin/python -m bench.e2e_resize --mode log      # the back end alone
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from bench.cluster import throwaway_cluster
from inplace.load.runner import LoadConfig, LoadResult, LoadRun

STAGES = ("request", "admit", "actuate", "clear", "end_to_end", "complete", "defer", "infeasible")


def print_result(result: LoadResult) -> None:
    report = result.report
    c, t = report["counts"], report["throughput"]
    run = report["run"]
    print(
        f"{run['mode']} mode, {run['nodes']} nodes, {run['pods']} pods: {c['injected']} resizes "
        f"injected, {c['completed']} completed, {c['deferred']} deferred, "
        f"{c['infeasible']} infeasible, {c['pending']} pending, {c['errors']} errors"
    )
    print(
        f"throughput {t['completed_per_s']:,.1f} resizes/s end to end "
        f"({t['injected_per_s']:,.1f} injected/s) over {t['window_s']:.1f}s; "
        f"setup {report['phases_s'].get('setup', 0):.1f}s"
    )
    for name in STAGES:
        s = report["stages"].get(name)
        if s and s["count"]:
            print(
                f"  {name:<11} n={s['count']:<6} p50 {s['p50_ms']:8.1f} ms  p90 "
                f"{s['p90_ms']:8.1f} ms  p99 {s['p99_ms']:8.1f} ms  max {s['max_ms']:8.1f} ms"
            )
    print(f"report {result.json_path}\nplot   {result.png_path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--resizes", type=int, default=5000)
    parser.add_argument("--mode", choices=("api", "log"), default="api")
    parser.add_argument("--rate", type=float, default=None, help="resizes/s (default open loop)")
    parser.add_argument("--duration", type=float, default=600.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "inplace-bench")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's directory")
    parser.add_argument(
        "--insecure-http", action="store_true", help="plain HTTP, no authentication (as before)"
    )
    args = parser.parse_args()
    with throwaway_cluster(secure=not args.insecure_http, keep=args.keep) as (
        cluster,
        settings,
        credentials,
    ):
        config = LoadConfig(
            settings=settings,
            api=cluster.api_url,
            # TLS + the admin's client certificate, as a user of `inplace up` runs it.
            credentials=credentials,
            mode=args.mode,
            nodes=args.nodes,
            pods=args.pods,
            resizes=args.resizes,
            rate=args.rate,
            duration=args.duration,
            seed=args.seed,
            concurrency=args.concurrency,
            out=args.out,
        )
        print_result(asyncio.run(LoadRun(config).run()))


if __name__ == "__main__":
    main()
