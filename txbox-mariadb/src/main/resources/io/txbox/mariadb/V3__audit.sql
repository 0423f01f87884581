-- txbox MariaDB schema version 3: what operators did to dead letters and replays, dry runs
-- included: who, when, which scope, how many. Every statement may run again.
CREATE TABLE IF NOT EXISTS {prefix}audit (
  id       BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
  at       DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  operator TEXT        NOT NULL,
  action   VARCHAR(64) NOT NULL,
  target   TEXT        NOT NULL,
  scope    TEXT        NOT NULL,
  count    BIGINT      NOT NULL,
  dry_run  BOOLEAN     NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

UPDATE {prefix}setting SET value = '3' WHERE name = 'schema_version';
