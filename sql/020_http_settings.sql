-- 020: an http monitor's expected_status and follow_redirects join its request options in
-- monitors.settings, as every other type's fields are there (issue 27): the http type reads
-- its settings like the others, and no process reads these two columns for it any more.
--
-- Their form in settings: "expected_status" as the column holds it ([[low, high], ...]) and
-- "follow_redirects": true, each left out at its default ([[200, 399]] and false) as every
-- option is, so a plain monitor's settings stay '{}'.
--
-- This is the expand half of an expand-contract change. The columns stay, and a trigger makes
-- an http row's settings say what its columns say on every write of either, whoever writes:
-- this release writes both (Check.legacy_columns), the release before writes the columns only
-- and, changing an option, rewrites settings without these keys. So during a rolling upgrade
-- a scheduler of the release before reads the columns and one of this release the settings,
-- and both read the same monitor.
-- The contract half comes in a later release, once no process of this one's predecessors can
-- run: stop writing the columns, then DROP TRIGGER monitors_http_settings, DROP FUNCTION
-- monitors_http_settings() and http_settings(jsonb, jsonb, boolean), and drop the two columns.

-- settings with the two keys as the columns give them.
CREATE FUNCTION http_settings(settings jsonb, expected_status jsonb, follow_redirects boolean)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT (settings - 'expected_status' - 'follow_redirects')
        || CASE WHEN expected_status = '[[200, 399]]'::jsonb THEN '{}'::jsonb
                ELSE jsonb_build_object('expected_status', expected_status) END
        || CASE WHEN follow_redirects THEN '{"follow_redirects": true}'::jsonb ELSE '{}'::jsonb END
$$;

-- Every http row written so far. updated_at stays (a client's ETag is still current); the
-- schedulers reload the rows changed (NOTIFY), which read the same either way.
UPDATE monitors SET settings = http_settings(settings, expected_status, follow_redirects)
WHERE type = 'http' AND settings <> http_settings(settings, expected_status, follow_redirects);

CREATE FUNCTION monitors_http_settings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.settings := http_settings(NEW.settings, NEW.expected_status, NEW.follow_redirects);
    RETURN NEW;
END $$;

CREATE TRIGGER monitors_http_settings BEFORE INSERT OR UPDATE OF settings, expected_status, follow_redirects
    ON monitors FOR EACH ROW WHEN (NEW.type = 'http') EXECUTE FUNCTION monitors_http_settings();
