-- What each part of txbox's outbox row costs a business transaction: the tables of run.sh.
-- "full" is txbox_outbox as V1 and V4 of txbox-jdbc create it (64 buckets); each later table
-- takes one part away; "dbz" is Debezium's outbox table as its documentation shows it.
DROP SCHEMA IF EXISTS rowcost CASCADE;
CREATE SCHEMA rowcost;
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE TABLE rowcost.orders (id bigserial PRIMARY KEY, customer text NOT NULL, total numeric NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE rowcost.dbz (id uuid PRIMARY KEY, aggregatetype varchar(255) NOT NULL, aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload jsonb);
CREATE TABLE rowcost.full (
  position bigint GENERATED ALWAYS AS IDENTITY, tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  bucket smallint GENERATED ALWAYS AS (((hashtext(coalesce(key, id::text)) & 2147483647) % 64)::smallint) STORED,
  key text, type text NOT NULL, version integer NOT NULL DEFAULT 1, destination text NOT NULL, payload bytea NOT NULL,
  content_type text NOT NULL DEFAULT 'application/octet-stream', headers jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(), available_at timestamptz, PRIMARY KEY (bucket, tx_id, position));
ALTER TABLE rowcost.full
  ADD CONSTRAINT t1 CHECK (type ~ '\S' AND length(type) <= 255) NOT VALID,
  ADD CONSTRAINT t2 CHECK (version >= 1) NOT VALID,
  ADD CONSTRAINT t3 CHECK (key IS NULL OR length(key) <= 255) NOT VALID,
  ADD CONSTRAINT t4 CHECK (destination ~ '\S' AND length(destination) <= 255) NOT VALID,
  ADD CONSTRAINT t5 CHECK (content_type ~ '\S' AND length(content_type) <= 255) NOT VALID,
  ADD CONSTRAINT t6 CHECK (jsonb_typeof(headers) = 'object') NOT VALID;
CREATE TABLE rowcost.nochecks (LIKE rowcost.full INCLUDING ALL);
ALTER TABLE rowcost.nochecks DROP CONSTRAINT t1, DROP CONSTRAINT t2, DROP CONSTRAINT t3, DROP CONSTRAINT t4, DROP CONSTRAINT t5, DROP CONSTRAINT t6;
-- the bucket from the database's random(), not a generated column: what the generated column costs
CREATE TABLE rowcost.notgenerated (LIKE rowcost.nochecks INCLUDING ALL);
ALTER TABLE rowcost.notgenerated ALTER COLUMN bucket DROP EXPRESSION;
ALTER TABLE rowcost.notgenerated ALTER COLUMN bucket SET DEFAULT (random() * 63)::smallint;
-- and the position alone as the key: what the bucketed key costs
CREATE TABLE rowcost.positionkey (LIKE rowcost.notgenerated INCLUDING DEFAULTS INCLUDING IDENTITY);
ALTER TABLE rowcost.positionkey ADD PRIMARY KEY (position);
