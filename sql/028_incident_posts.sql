-- 028: incident posts on status pages (issue 32, item 1). What the people who run the services
-- say on a page: a title, the page's monitors or groups it affects, an impact, and a timeline of
-- updates, each with a state and a Markdown text (rendered safely when shown: monitor/markdown.py).
--
-- A post is on one status page (it belongs to the page's account): what it affects is named
-- among what that page shows, so it cannot point at monitors the page keeps private. A post
-- is resolved by its last update's state; once resolved it takes no more updates.
CREATE TABLE incident_posts (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  bigint      NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    page_id     bigint      NOT NULL REFERENCES status_pages (id) ON DELETE CASCADE,
    title       text        NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    impact      text        NOT NULL CHECK (impact IN ('none', 'minor', 'major', 'critical')),
    -- Monitors of the page by id, and the page's groups by name, in the order given.
    monitor_ids bigint[]    NOT NULL DEFAULT '{}',
    groups      text[]      NOT NULL DEFAULT '{}',
    -- The last update's state, and when the update that resolved it was written.
    state       text        NOT NULL CHECK (state IN ('investigating', 'identified', 'monitoring', 'resolved')),
    resolved_at timestamptz,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    CHECK ((state = 'resolved') = (resolved_at IS NOT NULL))
);
-- A page's posts, newest first (its listing and its public build).
CREATE INDEX incident_posts_page ON incident_posts (page_id, id DESC);

CREATE TABLE incident_post_updates (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    post_id    bigint      NOT NULL REFERENCES incident_posts (id) ON DELETE CASCADE,
    state      text        NOT NULL CHECK (state IN ('investigating', 'identified', 'monitoring', 'resolved')),
    -- Markdown, as written; and the sanitiser's HTML of it (monitor/markdown.py), made once
    -- when written, by the renderer of that version: a page build does not render a year of
    -- updates again. A row of an older renderer is rendered afresh when read.
    body       text        NOT NULL CHECK (length(body) BETWEEN 1 AND 20000),
    html       text        NOT NULL,
    renderer   smallint    NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX incident_post_updates_post ON incident_post_updates (post_id, id);

-- How far back a page lists resolved posts (open ones are always shown).
ALTER TABLE status_pages ADD COLUMN post_history_days integer NOT NULL DEFAULT 90
    CHECK (post_history_days IN (30, 90, 365));
