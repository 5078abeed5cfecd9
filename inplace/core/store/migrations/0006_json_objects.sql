-- The columns a role reads at its start from the projection (issue 16) hold json, not jsonb:
-- PostgreSQL keeps json as the text the projector wrote, so a snapshot's read sends it as it
-- is, where jsonb is printed anew for every row. At 50,000 pods that printing was ~0.45 s of
-- every role's restart (a pods read took 0.55-0.76 s as jsonb, 0.15-0.18 s as json). Nothing
-- compares or indexes these columns; `->>` works on json alike. The rows' text is the
-- projector's own serialization, a function of the log, so a rebuild still checksums the same.
ALTER TABLE {schema}.pods
    ALTER COLUMN object TYPE json USING object::json,
    ALTER COLUMN demand TYPE json USING demand::json;
ALTER TABLE {schema}.allocations ALTER COLUMN payload TYPE json USING payload::json;
ALTER TABLE {schema}.nodes ALTER COLUMN object TYPE json USING object::json;
