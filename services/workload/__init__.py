"""The workload role: CloneSets, with template resource changes rolled out as in-place
vertical updates (OpenKruise's "In-place Workload Vertical Scaling" proposal)."""
