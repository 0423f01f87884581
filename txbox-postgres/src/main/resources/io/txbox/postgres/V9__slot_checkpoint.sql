-- txbox schema version 9: the logical relay's checkpoints (txbox-postgres-cdc), one row per slot,
-- written in the outbox's database so that they reach the standbys with the data. Until this
-- version LogicalReplication.migrate() created the table itself, outside these scripts, and the
-- columns added later (retrying_since, retrying_error) never reached a table made before them: the
-- relay's writes to them failed with a log line. A table made that way is kept here, and given
-- every column it lacks.
CREATE TABLE IF NOT EXISTS {schema}.{prefix}slot_checkpoint (
  slot            text    PRIMARY KEY,
  delivered_below xid8    NOT NULL,
  still_open      xid8[]  NOT NULL,
  confirmed_lsn   pg_lsn  NOT NULL,
  timeline        integer NOT NULL
);
ALTER TABLE {schema}.{prefix}slot_checkpoint
  ADD COLUMN IF NOT EXISTS wal_messages   boolean     NOT NULL DEFAULT false,
  ADD COLUMN IF NOT EXISTS marked_at      timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN IF NOT EXISTS gap_from_lsn   pg_lsn,
  ADD COLUMN IF NOT EXISTS gap_to_lsn     pg_lsn,
  ADD COLUMN IF NOT EXISTS gap_from_time  timestamptz,
  ADD COLUMN IF NOT EXISTS gap_to_time    timestamptz,
  ADD COLUMN IF NOT EXISTS gap_found_at   timestamptz,
  ADD COLUMN IF NOT EXISTS retrying_since timestamptz,
  ADD COLUMN IF NOT EXISTS retrying_error text;
