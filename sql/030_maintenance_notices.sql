-- 030: maintenance notices on status pages (issue 32, item 2). A window may carry a public
-- text (plain text or the safe Markdown of incident posts: monitor/markdown.py, rendered when
-- a page is built) and how many hours before each occurrence the pages that show its monitors
-- announce it. A window without a text is announced as before (by its name, AHEAD in
-- monitor/status/data.py): the text is what the team chose to tell visitors.
--
-- Expand-only: a nullable column and one with a constant default, no rewrite of the table.
ALTER TABLE maintenance_windows
    ADD COLUMN public_text text CHECK (length(public_text) BETWEEN 1 AND 2000),
    ADD COLUMN announce_hours integer NOT NULL DEFAULT 24 CHECK (announce_hours BETWEEN 0 AND 720);
