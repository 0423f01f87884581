-- What each part of txbox's outbox row costs a business transaction: the tables of run.sh.
-- "nochecks" is txbox_outbox as V1 of txbox-postgres creates it (64 buckets); run.sh then gives
-- "txbox_outbox" (the "full" variant) version 8's CHECK and "six_outbox" version 4's six, from
-- txbox-postgres's own migration files; each table after "nochecks" takes one more part away; "dbz" is
-- Debezium's outbox table as its documentation shows it.
DROP SCHEMA IF EXISTS rowcost CASCADE;
CREATE SCHEMA rowcost;
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE TABLE rowcost.orders (id bigserial PRIMARY KEY, customer text NOT NULL, total numeric NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE rowcost.dbz (id uuid PRIMARY KEY, aggregatetype varchar(255) NOT NULL, aggregateid varchar(255) NOT NULL, type varchar(255) NOT NULL, payload jsonb);
CREATE TABLE rowcost.nochecks (
  position bigint GENERATED ALWAYS AS IDENTITY, tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  bucket smallint GENERATED ALWAYS AS (((hashtext(coalesce(key, id::text)) & 2147483647) % 64)::smallint) STORED,
  key text, type text NOT NULL, version integer NOT NULL DEFAULT 1, destination text NOT NULL, payload bytea NOT NULL,
  content_type text NOT NULL DEFAULT 'application/octet-stream', headers jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(), available_at timestamptz, PRIMARY KEY (bucket, tx_id, position));
CREATE TABLE rowcost.txbox_outbox (LIKE rowcost.nochecks INCLUDING ALL);
CREATE TABLE rowcost.six_outbox (LIKE rowcost.nochecks INCLUDING ALL);
-- the bucket from the database's random(), not a generated column: what the generated column costs
CREATE TABLE rowcost.notgenerated (LIKE rowcost.nochecks INCLUDING ALL);
ALTER TABLE rowcost.notgenerated ALTER COLUMN bucket DROP EXPRESSION;
ALTER TABLE rowcost.notgenerated ALTER COLUMN bucket SET DEFAULT (random() * 63)::smallint;
-- and the position alone as the key: what the bucketed key costs
CREATE TABLE rowcost.positionkey (LIKE rowcost.notgenerated INCLUDING DEFAULTS INCLUDING IDENTITY);
ALTER TABLE rowcost.positionkey ADD PRIMARY KEY (position);
