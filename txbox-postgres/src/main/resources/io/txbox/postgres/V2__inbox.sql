-- txbox schema version 2: the inbox. One row per message a consumer processed, written in the
-- consumer's own transaction; the primary key is what makes a redelivered message a duplicate.
CREATE TABLE {schema}.{prefix}inbox (
  consumer     text        NOT NULL,
  message_id   uuid        NOT NULL,
  received_at  timestamptz NOT NULL DEFAULT now(),
  processed_at timestamptz,
  status       text        NOT NULL DEFAULT 'processed',
  attempts     integer     NOT NULL DEFAULT 1,
  last_error   text,
  PRIMARY KEY (consumer, message_id)
);
