-- txbox MariaDB schema version 2: the inbox, the inbox queue and consumer-side dead letters. The
-- table prefix in braces is filled in by the migration. Every statement may run again.

-- One row per (consumer, message): a second delivery finds the row and is a duplicate. status is
-- processed, queued (waiting in the queue), dead, parked (behind a dead message of its key) or
-- discarded. The index on received_at keeps the janitor's deletes of old records a range scan.
CREATE TABLE IF NOT EXISTS {prefix}inbox (
  consumer     VARCHAR(100) CHARACTER SET ascii NOT NULL,
  message_id   CHAR(36)     CHARACTER SET ascii NOT NULL,
  received_at  DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  processed_at DATETIME(6),
  status       VARCHAR(16)  CHARACTER SET ascii NOT NULL DEFAULT 'processed',
  attempts     INT          NOT NULL DEFAULT 1,
  last_error   TEXT,
  PRIMARY KEY (consumer, message_id),
  KEY {prefix}inbox_received (received_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Message bodies: queued for an InboxQueue's workers, or kept dead or parked. queue_key is the
-- message's key, or a key of its own when it has none. A key's next message is its lowest
-- sequence (messages without one last), then the earliest position.
CREATE TABLE IF NOT EXISTS {prefix}inbox_queue (
  consumer     VARCHAR(100) CHARACTER SET ascii NOT NULL,
  message_id   CHAR(36)     CHARACTER SET ascii NOT NULL,
  position     BIGINT       NOT NULL AUTO_INCREMENT,
  queue_key    VARCHAR(255) NOT NULL,
  sequence     BIGINT,
  `key`        VARCHAR(255),
  type         VARCHAR(255) NOT NULL,
  version      INT          NOT NULL,
  destination  VARCHAR(255) NOT NULL,
  payload      LONGBLOB     NOT NULL,
  content_type VARCHAR(255) NOT NULL,
  headers      LONGTEXT     NOT NULL,
  created_at   DATETIME(6)  NOT NULL,
  received_at  DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  available_at DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  status       VARCHAR(16)  CHARACTER SET ascii NOT NULL DEFAULT 'queued',
  attempts     INT          NOT NULL DEFAULT 0,
  last_error   TEXT,
  PRIMARY KEY (consumer, message_id),
  UNIQUE KEY {prefix}inbox_queue_position (position),
  KEY {prefix}inbox_queue_head (consumer, status, queue_key, sequence, position)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The last sequence number processed per key, for InboxQueue's ordering by sequence header.
CREATE TABLE IF NOT EXISTS {prefix}inbox_key (
  consumer      VARCHAR(100) CHARACTER SET ascii NOT NULL,
  `key`         VARCHAR(255) NOT NULL,
  last_sequence BIGINT       NOT NULL,
  PRIMARY KEY (consumer, `key`)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- A row per parked key. Parking a message locks the row in share mode and freeing the key locks
-- it for update, so no message is parked behind a key that was just freed. An operator's retry
-- request waits here for the running consumer, which has the handler.
CREATE TABLE IF NOT EXISTS {prefix}inbox_parked_key (
  consumer           VARCHAR(100) CHARACTER SET ascii NOT NULL,
  queue_key          VARCHAR(255) NOT NULL,
  parked_at          DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  retry_requested_at DATETIME(6),
  retry_requested_by VARCHAR(255),
  PRIMARY KEY (consumer, queue_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

UPDATE {prefix}setting SET value = '2' WHERE name = 'schema_version';
