-- txbox schema version 7: an operator's request to retry a parked key (txbox dead-letters retry
-- --consumer). The running consumer, which has the handler, takes the request and processes the
-- key's messages in order. Nullable columns without a default: no table rewrite.
ALTER TABLE {schema}.{prefix}inbox_parked_key
  ADD COLUMN retry_requested_at timestamptz,
  ADD COLUMN retry_requested_by text;
