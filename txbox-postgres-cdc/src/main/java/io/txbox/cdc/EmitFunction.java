package io.txbox.cdc;

/**
 * The SQL function that lets plain-SQL writers send an event as a WAL message, in the format
 * {@link WalEnvelope} reads: {@code <schema>.<prefix>emit(destination, key, type, payload,
 * [version, content_type, headers, available_at, id, message_prefix])}, returning the event's id.
 *
 * <pre>{@code
 * SELECT txbox_emit('orders', 'order-42', 'OrderPlaced', convert_to('{"id":42}', 'UTF8'),
 *                   content_type => 'application/json');
 * }</pre>
 */
final class EmitFunction {
  private EmitFunction() {}

  static String sql(String schema, String tablePrefix) {
    String field = schema + "." + tablePrefix + "wal_field";
    String emit = schema + "." + tablePrefix + "emit";
    return "CREATE OR REPLACE FUNCTION " + field + "(value text) RETURNS bytea"
        + " LANGUAGE sql IMMUTABLE AS $f$"
        + " SELECT CASE WHEN value IS NULL THEN int4send(-1)"
        + " ELSE int4send(octet_length(convert_to(value, 'UTF8'))) || convert_to(value, 'UTF8') END $f$;\n"
        + "CREATE OR REPLACE FUNCTION " + emit + "(destination text, key text, type text, payload bytea,"
        + " version integer DEFAULT 1, content_type text DEFAULT 'application/octet-stream',"
        + " headers jsonb DEFAULT '{}', available_at timestamptz DEFAULT NULL,"
        + " id uuid DEFAULT gen_random_uuid(), message_prefix text DEFAULT '"
        + LogicalReplication.DEFAULT_MESSAGE_PREFIX + "')"
        + " RETURNS uuid LANGUAGE plpgsql AS $f$\n"
        + "DECLARE\n"
        + "  envelope bytea;\n"
        + "  header record;\n"
        + "BEGIN\n"
        + "  IF destination IS NULL OR type IS NULL OR version IS NULL OR payload IS NULL THEN\n"
        + "    RAISE EXCEPTION 'destination, type, version and payload must not be null (an empty payload is ''''::bytea)';\n"
        + "  END IF;\n"
        + "  envelope := '\\x01'::bytea || uuid_send(id) || " + field + "(destination)"
        + " || " + field + "(key) || " + field + "(type) || int4send(version)"
        + " || " + field + "(content_type)"
        + " || int4send((SELECT count(*)::int FROM jsonb_each_text(coalesce(headers, '{}'))));\n"
        + "  FOR header IN SELECT * FROM jsonb_each_text(coalesce(headers, '{}')) LOOP\n"
        + "    envelope := envelope || " + field + "(header.key) || " + field + "(header.value);\n"
        + "  END LOOP;\n"
        + "  envelope := envelope || int8send((extract(epoch FROM now()) * 1000000)::bigint)"
        + " || int8send(coalesce((extract(epoch FROM available_at) * 1000000)::bigint, '" + Long.MIN_VALUE + "'::bigint))"
        + " || payload;\n"
        + "  PERFORM pg_logical_emit_message(true, message_prefix, envelope);\n"
        + "  RETURN id;\n"
        + "END $f$";
  }
}
