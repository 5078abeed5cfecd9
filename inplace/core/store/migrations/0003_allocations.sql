-- The kubelet's allocation checkpoint (issue 16): the latest Allocated event of each pod,
-- requests AND limits per container (status.allocatedResources shows only requests), so a
-- kubelet starts from the projection like every other role instead of replaying the log.
CREATE TABLE {schema}.allocations (
    namespace text  NOT NULL,
    name      text  NOT NULL,
    payload   jsonb NOT NULL,
    PRIMARY KEY (namespace, name)
);

-- A projection written before this table existed: its history has every Allocated event; keep
-- each existing pod's latest one that no deletion or eviction came after.
INSERT INTO {schema}.allocations (namespace, name, payload)
SELECT DISTINCT ON (h.namespace, h.pod_name) h.namespace, h.pod_name, h.payload
FROM {schema}.pod_history h
JOIN {schema}.pods p ON p.namespace = h.namespace AND p.name = h.pod_name
WHERE h.event_type = 'Allocated'
  AND h."offset" > coalesce((
        SELECT max(d."offset") FROM {schema}.pod_history d
        WHERE d.namespace = h.namespace AND d.pod_name = h.pod_name
          AND d.event_type IN ('PodDeleted', 'PodEvicted')), -1)
ORDER BY h.namespace, h.pod_name, h."offset" DESC;
