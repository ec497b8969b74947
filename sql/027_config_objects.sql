-- Configuration as code (monitor/ascode/): which objects `monitor apply` made and keeps, under
-- the key their files give them, and what the last apply set (secrets masked), so the next plan
-- tells an edit made elsewhere (drift) from a change in the files. One row per managed object;
-- a row whose object was deleted by hand is found stale by the next plan (it creates it again).
CREATE TABLE config_objects (
    account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    resource text NOT NULL CHECK (resource IN ('channels', 'monitors', 'maintenance', 'status_pages')),
    key text NOT NULL,
    object_id bigint NOT NULL,
    applied jsonb NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, resource, key),
    UNIQUE (resource, object_id)
);
