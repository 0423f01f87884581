-- txbox schema version 4: the database refuses outbox rows that break the rules of a message, so
-- a plain-SQL writer gets a clear error in its own transaction instead of a row that can never be
-- relayed. NOT VALID: rows written before this version are not checked here (the relay
-- dead-letters whatever it cannot read, one row at a time), and adding the constraints does not
-- scan the table. Java's isBlank and PostgreSQL's \S differ on exotic white space, and length()
-- counts characters where Java counts UTF-16 units: the relay's per-row check stays the last word.
ALTER TABLE {schema}.{prefix}outbox
  ADD CONSTRAINT {prefix}outbox_type_valid
    CHECK (type ~ '\S' AND length(type) <= 255) NOT VALID,
  ADD CONSTRAINT {prefix}outbox_version_valid
    CHECK (version >= 1) NOT VALID,
  ADD CONSTRAINT {prefix}outbox_key_valid
    CHECK (key IS NULL OR length(key) <= 255) NOT VALID,
  ADD CONSTRAINT {prefix}outbox_destination_valid
    CHECK (destination ~ '\S' AND length(destination) <= 255) NOT VALID,
  ADD CONSTRAINT {prefix}outbox_content_type_valid
    CHECK (content_type ~ '\S' AND length(content_type) <= 255) NOT VALID,
  ADD CONSTRAINT {prefix}outbox_headers_valid
    CHECK (jsonb_typeof(headers) = 'object') NOT VALID;
