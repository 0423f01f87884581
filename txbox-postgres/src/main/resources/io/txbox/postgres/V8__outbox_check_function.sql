-- txbox schema version 8: version 4's six CHECK constraints become one, a call of a PL/pgSQL
-- function with the same rules.
-- The error: it still names the rule (txbox_outbox_type_valid, ...), now also the field and what
-- was wrong, with SQLSTATE 23514 (check_violation) as before, and no longer the row: a CHECK's
-- error carried the whole failing row, payload included, to the client and the server log.
-- The cost: PostgreSQL prepares a table's CHECK expressions again for every INSERT statement
-- (reads them back from text, simplifies and compiles them), where PL/pgSQL keeps this function
-- compiled and sets its expression up once a transaction. So a transaction of many events pays
-- half as much for the rules (~6 µs an insert, against ~12 µs; 50 inserts a transaction), and a
-- transaction of one event pays the same (txbox-bench/row-cost/run.sh; BENCHMARKS.md).
-- NOT VALID, as version 4: rows already written are not checked, and nothing scans the table.
CREATE OR REPLACE FUNCTION {schema}.{prefix}outbox_check(type text, version integer, key text,
    destination text, content_type text, headers jsonb)
  RETURNS boolean LANGUAGE plpgsql IMMUTABLE
  -- No SET search_path: it cost ~2 µs a transaction, since every statement after the call finds
  -- the path changed. A writer whose search_path puts its own length() or ~ before pg_catalog
  -- gets its own bad rows past this check, and the relay dead-letters them one by one.
AS $check$
DECLARE
  field text;
  problem text;
BEGIN
  -- one expression for a valid row: PL/pgSQL evaluates it on its fast path
  IF type ~ '\S' AND length(type) <= 255 AND version >= 1 AND (key IS NULL OR length(key) <= 255)
      AND destination ~ '\S' AND length(destination) <= 255
      AND content_type ~ '\S' AND length(content_type) <= 255 AND jsonb_typeof(headers) = 'object' THEN
    RETURN true;
  END IF;
  IF NOT coalesce(type ~ '\S' AND length(type) <= 255, false) THEN
    field := 'type';
    problem := 'must be 1 to 255 characters and not blank, was '
        || CASE WHEN type IS NULL THEN 'null' WHEN type !~ '\S' THEN 'blank' ELSE length(type) || ' characters' END;
  ELSIF NOT coalesce(version >= 1, false) THEN
    field := 'version';
    problem := 'must be 1 or more, was ' || coalesce(version::text, 'null');
  ELSIF length(key) > 255 THEN
    field := 'key';
    problem := 'must be at most 255 characters, was ' || length(key);
  ELSIF NOT coalesce(destination ~ '\S' AND length(destination) <= 255, false) THEN
    field := 'destination';
    problem := 'must be 1 to 255 characters and not blank, was ' || CASE WHEN destination IS NULL THEN 'null'
        WHEN destination !~ '\S' THEN 'blank' ELSE length(destination) || ' characters' END;
  ELSIF NOT coalesce(content_type ~ '\S' AND length(content_type) <= 255, false) THEN
    field := 'content_type';
    problem := 'must be 1 to 255 characters and not blank, was ' || CASE WHEN content_type IS NULL THEN 'null'
        WHEN content_type !~ '\S' THEN 'blank' ELSE length(content_type) || ' characters' END;
  ELSE
    field := 'headers';
    problem := 'must be a JSON object of names and strings, was ' || coalesce(jsonb_typeof(headers), 'null');
  END IF;
  RAISE EXCEPTION USING ERRCODE = 'check_violation', CONSTRAINT = '{prefix}outbox_valid', COLUMN = field,
      MESSAGE = '{prefix}outbox_' || field || '_valid: ' || field || ' ' || problem;
END $check$;

-- Every writer that may insert a row calls it, whatever default privileges the database has.
GRANT EXECUTE ON FUNCTION {schema}.{prefix}outbox_check(text, integer, text, text, text, jsonb) TO PUBLIC;

-- IF EXISTS: an operator may have dropped some of version 4's constraints.
ALTER TABLE {schema}.{prefix}outbox
  DROP CONSTRAINT IF EXISTS {prefix}outbox_type_valid,
  DROP CONSTRAINT IF EXISTS {prefix}outbox_version_valid,
  DROP CONSTRAINT IF EXISTS {prefix}outbox_key_valid,
  DROP CONSTRAINT IF EXISTS {prefix}outbox_destination_valid,
  DROP CONSTRAINT IF EXISTS {prefix}outbox_content_type_valid,
  DROP CONSTRAINT IF EXISTS {prefix}outbox_headers_valid,
  ADD CONSTRAINT {prefix}outbox_valid
    CHECK ({schema}.{prefix}outbox_check(type, version, key, destination, content_type, headers)) NOT VALID;
