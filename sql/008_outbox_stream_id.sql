-- 008: where each event went on the stream, so an alerter holding a monitor's newer event can
-- tell an older one that another alerter still holds (pending in the group) or that the stream
-- has not handed out yet, from one that is lost (Redis restarted without its data, the stream
-- trimmed): a lost one is published again rather than waited for.
ALTER TABLE outbox ADD COLUMN stream_id text;

-- Rows from before 007 carry their Telegram chats only in the payload: their destinations, so
-- newer events wait for them too.
UPDATE outbox SET destinations = ARRAY(
    SELECT DISTINCT 'telegram:' || chat
    FROM (
        SELECT c ->> 'chat_id' AS chat FROM jsonb_array_elements(
            CASE WHEN jsonb_typeof(payload -> 'channels') = 'array' THEN payload -> 'channels' ELSE '[]' END
        ) AS c WHERE c ->> 'kind' = 'telegram'
        UNION SELECT payload ->> 'telegram_chat_id'
    ) AS chats WHERE chat IS NOT NULL AND chat <> ''
)
WHERE destinations = '{}' AND monitor_id IS NOT NULL;
