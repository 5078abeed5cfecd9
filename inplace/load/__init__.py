"""`inplace load`: a seeded resize workload against a running cluster, followed resize by resize
through the log (ResizeProposed → Allocated → Actuated, or Deferred / Infeasible).

- `plan`: the workload, pure and repeatable from a seed (nodes, pods, the resize mix);
- `driver`: creates the nodes and pods through the API, then injects the resizes through the
  apiserver (`api` mode) or straight onto the log (`log` mode);
- `tracker`: follows the `pods` topic and times every stage per correlation id;
- `chaos`: SIGKILLs roles during the run and judges the cluster's consistency afterwards;
- `report`: summary table, JSON and PNG;
- `runner`: one run, start to end (what the CLI and the benchmark call).

Only `inplace.cli` and `bench/` import this package; it uses `inplace.core` and `schemas`
and never a service.
"""
