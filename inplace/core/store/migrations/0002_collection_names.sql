-- One name per collection (issue 16): tables take the Kubernetes resource names the read
-- models and ClusterState use.
ALTER TABLE {schema}.resource_quotas RENAME TO resourcequotas;
ALTER TABLE {schema}.limit_ranges RENAME TO limitranges;
ALTER TABLE {schema}.k8s_events RENAME TO events;
