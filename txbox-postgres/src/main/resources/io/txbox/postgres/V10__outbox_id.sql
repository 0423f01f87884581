-- txbox schema version 10: the outbox's own id, a random UUID made once. Exactly-once delivery
-- keeps it beside each checkpoint it writes to the broker, and refuses a checkpoint another outbox
-- wrote: two outboxes that share a Kafka cluster, a transactional-id prefix and a subscription name
-- would otherwise read each other's progress, and skip or resend events.
INSERT INTO {schema}.{prefix}setting (name, value) VALUES ('outbox_id', gen_random_uuid()::text)
  ON CONFLICT (name) DO NOTHING;
