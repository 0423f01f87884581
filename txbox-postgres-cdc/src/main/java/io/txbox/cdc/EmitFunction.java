package io.txbox.cdc;

import io.txbox.Message;

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

  /**
   * The function's definition.
   *
   * @param utf8Database whether the database stores text as UTF-8 ({@code server_encoding}): then
   *     a text's UTF-8 length is its {@code octet_length}, read without converting it a second time,
   *     and a name's first character shows most names not blank without a regular expression
   */
  static String sql(String schema, String tablePrefix, boolean utf8Database) {
    Texts texts = new Texts(utf8Database);
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
        // subquery, ~5.1 µs with null checks before the emit, ~5.3 µs now with all of the table's
        // rules checked after it; a PL/pgSQL function that only emits ~2.7 µs,
        // pg_logical_emit_message alone ~1.1 µs. In a UTF-8 database, lengths read without
        // converting the texts again and an ASCII test ahead of each regular expression then took
        // a call from 8.4-9.1 to 7.4-7.9 µs (loops of 100,000 calls with their arguments built;
        // the same call of a function that only emits: 5.1-5.3 µs; BENCHMARKS.md).
        // The fields are checked after the emit, not before it, by the rules of the outbox table's
        // CHECK (txbox-postgres's V4 and V8): a field that breaks them, headers that are not an
        // object, a null id or a null prefix each make the envelope or the prefix null, and
        // pg_logical_emit_message, being strict, then writes nothing and returns null. So a valid
        // call pays for one test of the result, and a bad one is named before the error aborts.
        // (Before, a null id or prefix returned as if the event had been sent, and a blank type
        // made a dead letter.)
        + "DECLARE\n"
        + "  lsn pg_lsn;\n"
        + "BEGIN\n"
        + "  lsn := pg_logical_emit_message(true, message_prefix, '\\x02'::bytea || uuid_send(id)"
        + " || " + texts.name("destination")
        + " || (CASE WHEN key IS NULL THEN int4send(-1) WHEN length(key) <= " + Message.MAX_NAME_LENGTH + " THEN "
        + texts.of("key") + " END)"
        + " || " + texts.name("type")
        + " || (CASE WHEN version >= 1 THEN int4send(version) END)"
        + " || " + texts.name("content_type")
        + " || (CASE WHEN headers IS NULL THEN " + texts.of("'{}'::text")
        + " WHEN jsonb_typeof(headers) = 'object' THEN " + texts.of("headers::text") + " END)"
        // date_part, not extract: a double, where extract computes in numeric, twice as slow
        + " || int8send((date_part('epoch', now()) * 1000000)::bigint)"
        + " || (CASE WHEN available_at IS NULL THEN int8send('" + Long.MIN_VALUE + "'::bigint)"
        + " ELSE int8send((date_part('epoch', available_at) * 1000000)::bigint) END)"
        + " || payload);\n"
        + "  IF lsn IS NULL THEN\n"
        + "    IF payload IS NULL THEN\n"
        + "      RAISE EXCEPTION 'payload must not be null (an empty payload is ''''::bytea)';\n"
        + "    ELSIF version IS NULL OR version < 1 THEN\n"
        + "      RAISE EXCEPTION 'version must be 1 or more, was %', coalesce(version::text, 'null');\n"
        + "    ELSIF key IS NOT NULL AND length(key) > " + Message.MAX_NAME_LENGTH + " THEN\n"
        + "      RAISE EXCEPTION 'key must be at most " + Message.MAX_NAME_LENGTH + " characters, was %', length(key);\n"
        + nameError("destination") + nameError("type") + nameError("content_type")
        + "    ELSIF id IS NULL OR message_prefix IS NULL THEN\n"
        + "      RAISE EXCEPTION 'id and message_prefix must not be null: leave them out for their defaults';\n"
        + "    END IF;\n"
        // the JSON type, not the headers: they may hold a token, and errors reach logs
        + "    RAISE EXCEPTION 'headers must be a JSON object of names and strings, was %', jsonb_typeof(headers);\n"
        + "  END IF;\n"
        + "  RETURN id;\n"
        + "END $f$;\n"
        // the helper earlier versions called
        + "DROP FUNCTION IF EXISTS " + schema + "." + tablePrefix + "wal_field(text)";
  }

  /** The branch of the error that names {@code value} when it broke {@link Texts#name}'s rule. */
  private static String nameError(String value) {
    return "    ELSIF " + value + " IS NULL OR " + value + " !~ '\\S' OR length(" + value + ") > "
        + Message.MAX_NAME_LENGTH + " THEN\n"
        + "      RAISE EXCEPTION '" + value + " must be 1 to " + Message.MAX_NAME_LENGTH
        + " characters and not blank, was %', CASE WHEN " + value + " IS NULL THEN 'null' WHEN " + value
        + " !~ '\\S' THEN 'blank' ELSE length(" + value + ") || ' characters' END;\n";
  }

  /** How the envelope's texts are written in SQL, for the database's encoding. */
  private record Texts(boolean utf8Database) {
    /** A name (destination, type, content type): its text when not blank and not too long, else null. */
    String name(String value) {
      return "(CASE WHEN " + notBlank(value) + " AND length(" + value + ") <= " + Message.MAX_NAME_LENGTH
          + " THEN " + of(value) + " END)";
    }

    private String notBlank(String value) {
      // A first character from '!' to '~' is no space in any locale, so in UTF-8 the regular
      // expression, ~0.2 µs a call, runs only for names that start otherwise. Not in other
      // encodings: in a multibyte one, ascii() refuses a first character beyond ASCII.
      String regex = value + " ~ '\\S'";
      return utf8Database ? "(ascii(" + value + ") BETWEEN 33 AND 126 OR " + regex + ")" : regex;
    }

    /** A text as the envelope holds it: its UTF-8 length, then its bytes. */
    String of(String value) {
      String bytes = "convert_to(" + value + ", 'UTF8')";
      return "int4send(octet_length(" + (utf8Database ? value : bytes) + ")) || " + bytes;
    }
  }
}
