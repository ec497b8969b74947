-- 013: public status pages and badges (issue 15). A status page belongs to an account and is
-- served to anyone at /status/<slug> (and at / of its own domain, by the Host header); it shows
-- groups of the account's monitors, each group naming monitors by id and by tag. A badge is
-- read through the monitor's badge token, random and unguessable, never through its id.

CREATE TABLE status_pages (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    slug        text        NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$'),
    title       text        NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    description text        CHECK (length(description) <= 2000),
    logo_url    text,
    -- A host name of the owner's that points at the api (lower case, no port).
    domain      text        UNIQUE,
    -- Whether visitors see each monitor's target (URL, host); hidden by default.
    show_urls   boolean     NOT NULL DEFAULT false,
    -- [{"name": ..., "monitor_ids": [...], "tags": [...]}], in the order shown.
    groups      jsonb       NOT NULL DEFAULT '[]',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX status_pages_account ON status_pages (account_id, id);

-- 32 random bytes from PostgreSQL's strong random source (two v4 UUIDs, 244 random bits),
-- URL-safe base64 without padding: 43 characters, filled in for the monitors there already are.
ALTER TABLE monitors ADD COLUMN badge_token text NOT NULL
    DEFAULT rtrim(translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'),
                            '+/', '-_'), '=');
CREATE UNIQUE INDEX monitors_badge_token ON monitors (badge_token);
