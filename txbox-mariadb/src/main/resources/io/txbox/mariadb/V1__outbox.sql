-- txbox MariaDB schema version 1: the outbox. The table prefix and the bucket count in braces are
-- filled in by the migration with validated values. Runs in the connection's current database; the
-- mariadb client and Flyway both read the DELIMITER lines around the trigger. Every statement may run
-- again: a migration cut short is finished by the next.

-- The log. The clustered key (bucket, position) makes a bucket's unread events one range; the
-- second index serves the relay's horizon (the positions after it), keeps a position to one row,
-- and is what InnoDB requires of an AUTO_INCREMENT column. utf8mb4_bin: keys compare byte for byte, as they hash.
CREATE TABLE IF NOT EXISTS {prefix}outbox (
  position     BIGINT        NOT NULL AUTO_INCREMENT,
  bucket       SMALLINT      NOT NULL DEFAULT 0,
  id           CHAR(36)      CHARACTER SET ascii NOT NULL DEFAULT (UUID()),
  `key`        VARCHAR(255),
  type         VARCHAR(255)  NOT NULL,
  version      INT           NOT NULL DEFAULT 1,
  destination  VARCHAR(255)  NOT NULL,
  payload      LONGBLOB      NOT NULL,
  content_type VARCHAR(255)  NOT NULL DEFAULT 'application/octet-stream',
  headers      LONGTEXT      NOT NULL DEFAULT '{}',
  created_at   DATETIME(6)   NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  available_at DATETIME(6),
  PRIMARY KEY (bucket, position),
  UNIQUE KEY {prefix}outbox_position (position),
  CONSTRAINT {prefix}outbox_type_valid CHECK (type REGEXP '[^[:space:]]'),
  CONSTRAINT {prefix}outbox_version_valid CHECK (version >= 1),
  CONSTRAINT {prefix}outbox_destination_valid CHECK (destination REGEXP '[^[:space:]]'),
  CONSTRAINT {prefix}outbox_content_type_valid CHECK (content_type REGEXP '[^[:space:]]'),
  CONSTRAINT {prefix}outbox_headers_valid CHECK (JSON_VALID(headers) AND JSON_TYPE(headers) = 'OBJECT')
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Writer epochs: every transaction that writes to the outbox holds a shared lock on an epoch row
-- from before its rows take their positions until it ends. A relay proves that every position up
-- to a ceiling is final (committed or never to be) by taking the epochs older than the one it
-- opened after reading the ceiling. See MariaDbOutboxStore's Javadoc and docs/mariadb.md.
CREATE TABLE IF NOT EXISTS {prefix}writer_epoch (
  epoch BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY
) ENGINE = InnoDB;
INSERT INTO {prefix}writer_epoch () VALUES ();

-- The trigger does three jobs for every writer, in Java or plain SQL: the bucket is derived from
-- the key (or the id), a position chosen by the writer is refused (the relay may have read past
-- it), and the epoch lock is taken before InnoDB hands out the row's position
-- (a BEFORE trigger runs first). MAX() may be read from an older snapshot under REPEATABLE READ;
-- the locking read then takes the oldest epoch still there at or after it, which is as good.
DELIMITER //
CREATE TRIGGER IF NOT EXISTS {prefix}outbox_before_insert BEFORE INSERT ON {prefix}outbox FOR EACH ROW
BEGIN
  DECLARE newest BIGINT;
  DECLARE held BIGINT;
  IF NEW.position <> 0 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT =
      'txbox: {prefix}outbox.position is given by the database: leave it out of the INSERT';
  END IF;
  SET NEW.bucket = CRC32(COALESCE(NEW.`key`, NEW.id)) % {buckets};
  SELECT MAX(epoch) INTO newest FROM {prefix}writer_epoch;
  SELECT epoch INTO held FROM {prefix}writer_epoch WHERE epoch >= newest ORDER BY epoch LIMIT 1
    LOCK IN SHARE MODE;
  IF held IS NULL THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT =
      'txbox: {prefix}writer_epoch is empty, so this outbox row could be skipped: run txbox migrate';
  END IF;
END//
DELIMITER ;

-- One row per (subscription, bucket): the checkpoint, the lease and the retry state.
CREATE TABLE IF NOT EXISTS {prefix}subscription (
  subscription    VARCHAR(255) NOT NULL,
  bucket          SMALLINT     NOT NULL,
  position        BIGINT       NOT NULL DEFAULT 0,
  owner           VARCHAR(255),
  lease_until     DATETIME(6),
  attempts        INT          NOT NULL DEFAULT 0,
  next_attempt_at DATETIME(6),
  last_error      TEXT,
  updated_at      DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  PRIMARY KEY (subscription, bucket)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Relay instances alive in a subscription, to split the buckets fairly.
CREATE TABLE IF NOT EXISTS {prefix}relay_instance (
  subscription VARCHAR(255) NOT NULL,
  instance     VARCHAR(255) NOT NULL,
  alive_until  DATETIME(6)  NOT NULL,
  PRIMARY KEY (subscription, instance)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Events a subscription gave up on, with a full copy of the event.
CREATE TABLE IF NOT EXISTS {prefix}dead_letter (
  subscription     VARCHAR(255) NOT NULL,
  position         BIGINT       NOT NULL,
  id               CHAR(36)     CHARACTER SET ascii NOT NULL,
  bucket           SMALLINT     NOT NULL,
  `key`            VARCHAR(255),
  type             VARCHAR(255) NOT NULL,
  version          INT          NOT NULL,
  destination      VARCHAR(255) NOT NULL,
  payload          LONGBLOB     NOT NULL,
  content_type     VARCHAR(255) NOT NULL,
  headers          LONGTEXT     NOT NULL,
  created_at       DATETIME(6)  NOT NULL,
  error            TEXT         NOT NULL,
  attempts         INT          NOT NULL,
  dead_lettered_at DATETIME(6)  NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  PRIMARY KEY (subscription, position)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE IF NOT EXISTS {prefix}setting (
  name  VARCHAR(64)  NOT NULL PRIMARY KEY,
  value VARCHAR(255) NOT NULL
) ENGINE = InnoDB;
INSERT IGNORE INTO {prefix}setting (name, value) VALUES ('bucket_count', '{buckets}'), ('schema_version', '1');
