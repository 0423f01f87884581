-- txbox schema version 6: what operators did to dead letters, dry runs included: who, when,
-- which scope, how many.
CREATE TABLE {schema}.{prefix}audit (
  id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at       timestamptz NOT NULL DEFAULT now(),
  operator text        NOT NULL,
  action   text        NOT NULL,
  target   text        NOT NULL,
  scope    text        NOT NULL,
  count    bigint      NOT NULL,
  dry_run  boolean     NOT NULL
);
