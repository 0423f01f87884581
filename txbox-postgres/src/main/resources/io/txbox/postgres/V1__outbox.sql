-- txbox schema version 1. Placeholders in braces are replaced by the migration with validated
-- names: {schema}, {prefix}, {buckets}.

-- The log. One index only: every index is paid by every business transaction that writes here.
-- The bucket is derived from the key by the database, so writers in any language get it right.
CREATE TABLE {schema}.{prefix}outbox (
  position     bigint      GENERATED ALWAYS AS IDENTITY,
  tx_id        xid8        NOT NULL DEFAULT pg_current_xact_id(),
  id           uuid        NOT NULL DEFAULT gen_random_uuid(),
  bucket       smallint    GENERATED ALWAYS AS
                 (((hashtext(coalesce(key, id::text)) & 2147483647) % {buckets})::smallint) STORED,
  key          text,
  type         text        NOT NULL,
  version      integer     NOT NULL DEFAULT 1,
  destination  text        NOT NULL,
  payload      bytea       NOT NULL,
  content_type text        NOT NULL DEFAULT 'application/octet-stream',
  headers      jsonb       NOT NULL DEFAULT '{}',
  created_at   timestamptz NOT NULL DEFAULT now(),
  available_at timestamptz,
  PRIMARY KEY (bucket, tx_id, position)
);

-- One row per (subscription, bucket): the checkpoint, the lease and the retry state.
CREATE TABLE {schema}.{prefix}subscription (
  subscription    text        NOT NULL,
  bucket          smallint    NOT NULL,
  tx_id           xid8        NOT NULL DEFAULT '0',
  position        bigint      NOT NULL DEFAULT 0,
  owner           text,
  lease_until     timestamptz,
  attempts        integer     NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  last_error      text,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (subscription, bucket)
);

-- Relay instances alive in a subscription, to split the buckets fairly.
CREATE TABLE {schema}.{prefix}relay_instance (
  subscription text        NOT NULL,
  instance     text        NOT NULL,
  alive_until  timestamptz NOT NULL,
  PRIMARY KEY (subscription, instance)
);

-- Events a subscription gave up on, with a full copy of the event.
CREATE TABLE {schema}.{prefix}dead_letter (
  subscription    text        NOT NULL,
  position        bigint      NOT NULL,
  tx_id           xid8        NOT NULL,
  id              uuid        NOT NULL,
  bucket          smallint    NOT NULL,
  key             text,
  type            text        NOT NULL,
  version         integer     NOT NULL,
  destination     text        NOT NULL,
  payload         bytea       NOT NULL,
  content_type    text        NOT NULL,
  headers         jsonb       NOT NULL,
  created_at      timestamptz NOT NULL,
  error           text        NOT NULL,
  attempts        integer     NOT NULL,
  dead_lettered_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (subscription, position)
);

CREATE TABLE {schema}.{prefix}setting (
  name  text PRIMARY KEY,
  value text NOT NULL
);
INSERT INTO {schema}.{prefix}setting (name, value) VALUES ('bucket_count', '{buckets}');
