-- txbox schema version 5: dead letters on the consuming side, sequenced per key. A message whose
-- handler failed for good stays in {inbox_queue} with status 'dead' (a plain inbox's too); every
-- later message of its key waits behind it there with status 'parked'. A key has a row here while
-- it is parked; the row is also the lock that orders parking a message against freeing the key.
CREATE TABLE {schema}.{prefix}inbox_parked_key (
  consumer  text        NOT NULL,
  queue_key text        NOT NULL,
  parked_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, queue_key)
);
CREATE INDEX {prefix}inbox_queue_parked ON {schema}.{prefix}inbox_queue (consumer, queue_key, sequence, position)
  WHERE status IN ('dead', 'parked');
