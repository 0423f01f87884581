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
    String emit = schema + "." + tablePrefix + "emit";
    return "CREATE OR REPLACE FUNCTION " + emit + "(destination text, key text, type text, payload bytea,"
        + " version integer DEFAULT 1, content_type text DEFAULT 'application/octet-stream',"
        + " headers jsonb DEFAULT '{}', available_at timestamptz DEFAULT NULL,"
        + " id uuid DEFAULT gen_random_uuid(), message_prefix text DEFAULT '"
        + LogicalReplication.DEFAULT_MESSAGE_PREFIX + "')"
        + " RETURNS uuid LANGUAGE plpgsql AS $f$\n"
        // An assignment, not PERFORM, of an expression with no subquery: PL/pgSQL evaluates it on
        // its fast path, with no executor start and end per call. Hence format 2 (the headers as
        // their JSON text; WalEnvelope), since expanding them with jsonb_each_text takes a
        // subquery, and the fields written out, since an SQL helper per field is not inlined. In a
        // loop of 50,000 calls in psql: ~90 µs a call with helpers, ~11 µs with PERFORM and the
        // subquery, ~4.8 µs with the checks before the emit, ~4.2 µs now; a PL/pgSQL function that
        // only emits ~2.7 µs, pg_logical_emit_message alone ~1.1 µs.
        // The fields are checked after the emit, not before it: a missing required field, headers
        // that are not an object, a null id or a null prefix each make the envelope or the prefix
        // null, and pg_logical_emit_message, being strict, then writes nothing and returns null. So
        // a valid call pays for one test, and a bad one is named before the error aborts. (Before,
        // a null id or prefix returned as if the event had been sent: it was not.)
        + "DECLARE\n"
        + "  lsn pg_lsn;\n"
        + "BEGIN\n"
        + "  lsn := pg_logical_emit_message(true, message_prefix, '\\x02'::bytea || uuid_send(id)"
        + " || " + required("destination") + " || " + field("key") + " || " + required("type") + " || int4send(version)"
        + " || " + required("content_type")
        + " || (CASE WHEN headers IS NULL THEN " + required("'{}'::text")
        + " WHEN jsonb_typeof(headers) = 'object' THEN " + required("headers::text") + " END)"
        // date_part, not extract: a double, where extract computes in numeric, twice as slow
        + " || int8send((date_part('epoch', now()) * 1000000)::bigint)"
        + " || (CASE WHEN available_at IS NULL THEN int8send('" + Long.MIN_VALUE + "'::bigint)"
        + " ELSE int8send((date_part('epoch', available_at) * 1000000)::bigint) END)"
        + " || payload);\n"
        + "  IF lsn IS NULL THEN\n"
        + "    IF destination IS NULL OR type IS NULL OR version IS NULL OR content_type IS NULL OR payload IS NULL THEN\n"
        + "      RAISE EXCEPTION 'destination, type, version, content_type and payload must not be null (an empty payload is ''''::bytea)';\n"
        + "    ELSIF id IS NULL OR message_prefix IS NULL THEN\n"
        + "      RAISE EXCEPTION 'id and message_prefix must not be null: leave them out for their defaults';\n"
        + "    END IF;\n"
        + "    RAISE EXCEPTION 'headers must be a JSON object of names and strings, was %', left(headers::text, 100);\n"
        + "  END IF;\n"
        + "  RETURN id;\n"
        + "END $f$;\n"
        // the helper earlier versions called
        + "DROP FUNCTION IF EXISTS " + schema + "." + tablePrefix + "wal_field(text)";
  }

  /** A text field as the envelope holds it: its UTF-8 length (-1 for null), then its bytes. */
  private static String field(String value) {
    return "(CASE WHEN " + value + " IS NULL THEN int4send(-1) ELSE " + required(value) + " END)";
  }

  /** A text field that must be there: null when it is not, which makes the whole envelope null. */
  private static String required(String value) {
    return "int4send(octet_length(convert_to(" + value + ", 'UTF8'))) || convert_to(" + value + ", 'UTF8')";
  }
}
