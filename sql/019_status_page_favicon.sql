-- 019: a status page's own favicon (issue 26, item 4): an https URL, as logo_url; a page
-- without one shows the default icon shipped with the package (monitor/status/static/).
ALTER TABLE status_pages ADD COLUMN favicon_url text;
