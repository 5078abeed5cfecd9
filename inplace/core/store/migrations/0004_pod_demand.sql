-- Each pod's demand on its node as the scheduler counts it (schemas/demand.py, issue 16): a
-- scheduler starting from the projection sums its nodes from these instead of decoding and
-- pricing every pod. Rows written before this column are NULL until the projector's start fills
-- them in (`ProjectionStore.fill_demands`); a scheduler prices such a pod from its object.
ALTER TABLE {schema}.pods ADD COLUMN demand jsonb;
