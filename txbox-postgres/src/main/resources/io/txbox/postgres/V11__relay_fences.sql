-- txbox schema version 11: how often the broker fenced each relay instance (exactly-once
-- delivery), and when last. A relay fenced while it still works lost its buckets to another, as
-- after a pause longer than its lease; txbox status names one that keeps losing them.
ALTER TABLE {schema}.{prefix}relay_instance
  ADD COLUMN IF NOT EXISTS fences integer NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS last_fenced_at timestamptz;
