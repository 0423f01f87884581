-- txbox schema version 3: the inbox's queue mode. A queued message keeps its inbox row (status
-- 'queued', which the janitor leaves alone) for deduplication, and its body here until a worker
-- has processed it; a message that exhausted its retries stays here with status 'dead'.
CREATE TABLE {schema}.{prefix}inbox_queue (
  consumer     text        NOT NULL,
  message_id   uuid        NOT NULL,
  position     bigserial   NOT NULL,
  queue_key    text        NOT NULL, -- the message's key, or a key of its own when it has none
  sequence     bigint,
  key          text,
  type         text        NOT NULL,
  version      integer     NOT NULL,
  destination  text        NOT NULL,
  payload      bytea       NOT NULL,
  content_type text        NOT NULL,
  headers      jsonb       NOT NULL,
  created_at   timestamptz NOT NULL,
  received_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  available_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  status       text        NOT NULL DEFAULT 'queued',
  attempts     integer     NOT NULL DEFAULT 0,
  last_error   text,
  PRIMARY KEY (consumer, message_id)
);
-- The head of each key: its queued message with the lowest (sequence, position).
CREATE INDEX {prefix}inbox_queue_head ON {schema}.{prefix}inbox_queue (consumer, queue_key, sequence, position)
  WHERE status = 'queued';

-- The last sequence number processed per consumer and key, for keys whose messages carry one.
CREATE TABLE {schema}.{prefix}inbox_key (
  consumer      text   NOT NULL,
  key           text   NOT NULL,
  last_sequence bigint NOT NULL,
  PRIMARY KEY (consumer, key)
);
