-- 005: every insert into the outbox is announced, so the scheduler's relay publishes new
-- rows at once instead of reading the table every second. The scheduler's own rows wake
-- it directly; this covers the rows others write (the api's channel test messages). The
-- relay still reads the table now and then, in case a notification was missed.

CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outbox_added', '');
    RETURN NULL;
END $$;

CREATE TRIGGER outbox_added AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
