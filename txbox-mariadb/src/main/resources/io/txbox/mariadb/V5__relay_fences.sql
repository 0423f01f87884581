-- txbox MariaDB schema version 5: how often the broker fenced each relay instance (exactly-once
-- delivery), and when last. A relay fenced while it still works lost its buckets to another, as
-- after a pause longer than its lease; txbox status names one that keeps losing them. Every
-- statement may run again.
ALTER TABLE {prefix}relay_instance
  ADD COLUMN IF NOT EXISTS fences INT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS last_fenced_at DATETIME(6) NULL;

UPDATE {prefix}setting SET value = '5' WHERE name = 'schema_version';
