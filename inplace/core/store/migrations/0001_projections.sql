-- Projections of the log. Every row derives from events only (no now(), no serials), so a
-- rebuild from offset 0 reproduces the same content and the same checksum.

CREATE TABLE {schema}.consumer_offsets (
    consumer    text    NOT NULL,
    topic       text    NOT NULL,
    partition   integer NOT NULL,
    next_offset bigint  NOT NULL,
    PRIMARY KEY (consumer, topic, partition)
);

CREATE TABLE {schema}.pods (
    namespace        text   NOT NULL,
    name             text   NOT NULL,
    uid              text   NOT NULL,
    node_name        text,
    phase            text   NOT NULL,
    resize_status    text,
    qos_class        text,
    resource_version bigint NOT NULL,
    object           jsonb  NOT NULL,
    PRIMARY KEY (namespace, name)
);
CREATE INDEX pods_node_name ON {schema}.pods (node_name);

-- One row per container: spec (desired), allocatedResources and status.resources (actual).
CREATE TABLE {schema}.containers (
    namespace       text    NOT NULL,
    pod_name        text    NOT NULL,
    name            text    NOT NULL,
    init            boolean NOT NULL,
    sidecar         boolean NOT NULL,
    desired         jsonb   NOT NULL,
    allocated       jsonb,
    actual          jsonb,
    restart_count   integer NOT NULL,
    PRIMARY KEY (namespace, pod_name, name)
);

CREATE TABLE {schema}.nodes (
    name             text   PRIMARY KEY,
    capacity         jsonb  NOT NULL,
    allocatable      jsonb  NOT NULL,
    initial_capacity jsonb,
    resource_version bigint NOT NULL,
    object           jsonb  NOT NULL
);

CREATE TABLE {schema}.namespaces (
    name             text   PRIMARY KEY,
    resource_version bigint NOT NULL,
    object           jsonb  NOT NULL
);

CREATE TABLE {schema}.resource_quotas (
    namespace        text   NOT NULL,
    name             text   NOT NULL,
    resource_version bigint NOT NULL,
    object           jsonb  NOT NULL,
    PRIMARY KEY (namespace, name)
);

CREATE TABLE {schema}.limit_ranges (
    namespace        text   NOT NULL,
    name             text   NOT NULL,
    resource_version bigint NOT NULL,
    object           jsonb  NOT NULL,
    PRIMARY KEY (namespace, name)
);

CREATE TABLE {schema}.k8s_events (
    namespace        text   NOT NULL,
    name             text   NOT NULL,
    involved_kind    text,
    involved_name    text   NOT NULL,
    reason           text,
    type             text,
    count            integer NOT NULL,
    resource_version bigint NOT NULL,
    object           jsonb  NOT NULL,
    PRIMARY KEY (namespace, name)
);
CREATE INDEX k8s_events_involved ON {schema}.k8s_events (namespace, involved_name);

-- Every pod event in log order: the resize history (Proposed → Allocated → Actuated …).
CREATE TABLE {schema}.pod_history (
    topic          text        NOT NULL,
    partition      integer     NOT NULL,
    "offset"       bigint      NOT NULL,
    namespace      text        NOT NULL,
    pod_name       text        NOT NULL,
    event_id       uuid        NOT NULL,
    event_type     text        NOT NULL,
    event_time     timestamptz NOT NULL,
    correlation_id text        NOT NULL,
    causation_id   uuid,
    producer       text        NOT NULL,
    payload        jsonb       NOT NULL,
    PRIMARY KEY (topic, partition, "offset")
);
CREATE INDEX pod_history_pod ON {schema}.pod_history (namespace, pod_name, partition, "offset");
CREATE INDEX pod_history_correlation ON {schema}.pod_history (correlation_id);

-- Records nobody could parse; they are also parked on the dead-letter topic.
CREATE TABLE {schema}.dead_letters (
    topic     text    NOT NULL,
    partition integer NOT NULL,
    "offset"  bigint  NOT NULL,
    reason    text    NOT NULL,
    raw       bytea,
    PRIMARY KEY (topic, partition, "offset")
);
