-- policy/v1 PodDisruptionBudgets, as the other namespaced policy objects are kept.
CREATE TABLE {schema}.poddisruptionbudgets (
    namespace        text   NOT NULL,
    name             text   NOT NULL,
    resource_version bigint NOT NULL,
    object           jsonb  NOT NULL,
    PRIMARY KEY (namespace, name)
);
