package io.txbox.bench;

import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.cdc.LogicalReplication;
import io.txbox.cdc.WalEnvelope;
import io.txbox.cdc.WalOutboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * What each way of writing an event costs a business transaction ({@code logical --parts write}):
 * a table row, Debezium's outbox row, a WAL message from Java, the emit SQL function and the floors
 * of each, as transactions per second of writers on {@code threads} connections, and the emit
 * function's calls timed inside the server.
 *
 * <pre>{@code
 * new LogicalWrites(8, 10, 3).measure(db, results);
 * }</pre>
 */
record LogicalWrites(int threads, int seconds, int rounds) {
  void measure(BenchDatabase db, Results results) throws Exception {
    PostgresOutboxStore tableStore = WriteOverhead.migrated(db.store().tablePrefix("write_").notifyOnAppend(false).build());
    LogicalReplication emitting = LogicalReplication.builder(db.dataSource, tableStore).slot("bench_write").build();
    emitting.migrate(); // the emit function
    emitting.drop(); // no slot keeps the WAL: a WAL message costs the writer the same either way
    // The floor of any PL/pgSQL emit function: one that only draws the id and emits the envelope
    // the writer built, where the emit function checks the fields and builds the envelope itself.
    db.execute("CREATE OR REPLACE FUNCTION " + BenchDatabase.SCHEMA + ".write_emit_floor(envelope bytea)"
        + " RETURNS uuid LANGUAGE plpgsql AS $f$ DECLARE lsn pg_lsn; id uuid := gen_random_uuid();"
        + " BEGIN lsn := pg_logical_emit_message(true, 'bench-write', envelope); RETURN id; END $f$");
    // The floor of any emit function that takes the fields as the emit function does: its
    // signature, called as the emit function is, but a body that only emits the payload.
    db.execute("CREATE OR REPLACE FUNCTION " + BenchDatabase.SCHEMA + ".write_emit_call_floor(destination text, key text,"
        + " type text, payload bytea, version integer DEFAULT 1, content_type text DEFAULT 'application/octet-stream',"
        + " headers jsonb DEFAULT '{}', available_at timestamptz DEFAULT NULL, id uuid DEFAULT gen_random_uuid(),"
        + " message_prefix text DEFAULT 'bench-write') RETURNS uuid LANGUAGE plpgsql AS $f$ DECLARE lsn pg_lsn;"
        + " BEGIN lsn := pg_logical_emit_message(true, message_prefix, payload); RETURN id; END $f$");
    Outbox table = Outbox.create(tableStore.writer());
    Outbox wal = Outbox.create(WalOutboxStore.withPrefix("bench-write"));
    db.execute(DebeziumBench.createTable());
    Map<String, TransactionRate.Work> variants = writeVariants(table, wal);
    Map<String, List<Double>> rates = new LinkedHashMap<>();
    variants.keySet().forEach(name -> rates.put(name, new ArrayList<>()));
    for (var v : variants.values()) {
      TransactionRate.measure(db.dataSource, threads, 3, v); // warm-up
    }
    for (int round = 1; round <= rounds; round++) {
      for (var v : variants.entrySet()) {
        double rate = TransactionRate.measure(db.dataSource, threads, seconds, v.getValue());
        rates.get(v.getKey()).add(rate);
        System.out.printf("round %d  %-12s %,10.0f tx/s%n", round, v.getKey(), rate);
      }
    }
    results.setting("writerThreads", threads);
    results.setting("secondsPerWriteMeasurement", seconds);
    results.setting("writeRounds", rounds);
    double bare = WriteOverhead.median(rates.get("bare"));
    results.add("write: business tx/s, bare (one INSERT), median of rounds", bare, "tx/s");
    results.add("write: + SELECT 1, the floor of one more statement", WriteOverhead.median(rates.get("second statement")),
        "tx/s", "bare", bare);
    results.add("write: + Outbox.send as a table row", WriteOverhead.median(rates.get("table row")), "tx/s", "bare", bare);
    results.add("write: + Debezium's outbox row (plain INSERT, jsonb payload)",
        WriteOverhead.median(rates.get("Debezium outbox row")), "tx/s", "bare", bare);
    results.add("write: + Outbox.send as a WAL message", WriteOverhead.median(rates.get("WAL message")), "tx/s", "bare", bare);
    double direct = WriteOverhead.median(rates.get("pg_logical_emit_message"));
    results.add("write: + pg_logical_emit_message of an envelope built in Java", direct, "tx/s", "bare", bare);
    results.add("write: + the emit SQL function", WriteOverhead.median(rates.get("emit function")), "tx/s",
        "pg_logical_emit_message", direct);
    results.add("write: + a PL/pgSQL function that only emits (the floor of any emit function)",
        WriteOverhead.median(rates.get("emit floor")), "tx/s", "pg_logical_emit_message", direct);
    results.add("write: + a PL/pgSQL function called with the emit function's fields that only emits the payload"
        + " (the floor of any emit function taking fields)",
        WriteOverhead.median(rates.get("emit call floor")), "tx/s", "pg_logical_emit_message", direct);
    emitInsideTheServer(db, results);
  }

  /**
   * The emit function, the floor of its call and {@code pg_logical_emit_message}, each timed by a
   * loop inside the server, in alternating rounds: what each costs in CPU, which the transactions
   * per second above show only through round trips and commits.
   */
  private void emitInsideTheServer(BenchDatabase db, Results results) throws SQLException {
    Message m = Events.orderPlaced("orders", 1);
    String declarations = "r uuid; l pg_lsn; p bytea := '\\x" + HexFormat.of().formatHex(m.payload())
        + "'; e bytea := '\\x" + HexFormat.of().formatHex(WalEnvelope.encode(m)) + "';";
    String call = "('orders', 'customer-' || i % 10000, 'OrderPlaced', p, content_type => 'application/json',"
        + " headers => jsonb_build_object('traceparent', '" + Events.TRACEPARENT + "'::text),"
        + " message_prefix => 'bench-write');";
    Map<String, String> statements = new LinkedHashMap<>();
    statements.put("emit function", "r := " + BenchDatabase.SCHEMA + ".write_emit" + call);
    statements.put("emit call floor", "r := " + BenchDatabase.SCHEMA + ".write_emit_call_floor" + call);
    statements.put("pg_logical_emit_message", "l := pg_logical_emit_message(true, 'bench-write', e);");
    Map<String, List<Double>> nanos = new LinkedHashMap<>();
    for (int round = 1; round <= rounds; round++) {
      for (var s : statements.entrySet()) {
        long each = ServerLoop.nanosPerCall(db, declarations, s.getValue(), 100_000);
        nanos.computeIfAbsent(s.getKey(), k -> new ArrayList<>()).add((double) each);
        System.out.printf("round %d  %-24s %,6d ns a call, inside the server%n", round, s.getKey(), each);
      }
    }
    double direct = WriteOverhead.median(nanos.get("pg_logical_emit_message"));
    results.add("write, inside the server: pg_logical_emit_message, ns a call", direct, "ns");
    results.add("write, inside the server: the emit SQL function, ns a call",
        WriteOverhead.median(nanos.get("emit function")), "ns", "pg_logical_emit_message", direct);
    results.add("write, inside the server: the call floor (the emit function's fields, a body that only emits), ns a call",
        WriteOverhead.median(nanos.get("emit call floor")), "ns", "pg_logical_emit_message", direct);
  }

  /** Each transaction inserts an order, and then the variant's event or statement. */
  private static Map<String, TransactionRate.Work> writeVariants(Outbox table, Outbox wal) {
    Map<String, TransactionRate.Work> variants = new LinkedHashMap<>();
    variants.put("bare", WriteOverhead::insertOrder);
    variants.put("second statement", (c, n) -> { // the floor of any write that is one more statement
      WriteOverhead.insertOrder(c, n);
      try (PreparedStatement p = c.prepareStatement("SELECT 1")) {
        p.executeQuery().close();
      }
    });
    variants.put("table row", (c, n) -> {
      WriteOverhead.insertOrder(c, n);
      table.send(c, Events.orderPlaced("orders", n));
    });
    variants.put("Debezium outbox row", (c, n) -> {
      WriteOverhead.insertOrder(c, n);
      try (PreparedStatement p = c.prepareStatement(DebeziumBench.insertEvent())) {
        DebeziumBench.bindEvent(p, UUID.randomUUID(), n);
        p.executeUpdate();
      }
    });
    variants.put("WAL message", (c, n) -> {
      WriteOverhead.insertOrder(c, n);
      wal.send(c, Events.orderPlaced("orders", n));
    });
    variants.put("emit function", (c, n) -> callEmit(c, n, "write_emit"));
    variants.put("emit call floor", (c, n) -> callEmit(c, n, "write_emit_call_floor"));
    variants.put("emit floor", (c, n) -> {
      WriteOverhead.insertOrder(c, n);
      try (PreparedStatement p = c.prepareStatement("SELECT " + BenchDatabase.SCHEMA + ".write_emit_floor(?)")) {
        p.setBytes(1, WalEnvelope.encode(Events.orderPlaced("orders", n)));
        p.executeQuery().close();
      }
    });
    variants.put("pg_logical_emit_message", (c, n) -> {
      WriteOverhead.insertOrder(c, n);
      try (PreparedStatement p = c.prepareStatement("SELECT pg_logical_emit_message(true, 'bench-write', ?)")) {
        p.setBytes(1, WalEnvelope.encode(Events.orderPlaced("orders", n)));
        p.executeQuery().close();
      }
    });
    return variants;
  }

  /** Inserts an order, and calls {@code function} with an event's fields, as a plain-SQL writer calls the emit function. */
  private static void callEmit(Connection c, long n, String function) throws SQLException {
    WriteOverhead.insertOrder(c, n);
    Message m = Events.orderPlaced("orders", n);
    try (PreparedStatement p = c.prepareStatement("SELECT " + BenchDatabase.SCHEMA + "." + function + "(?, ?, ?, ?,"
        + " content_type => ?, headers => jsonb_build_object('traceparent', ?::text), message_prefix => 'bench-write')")) {
      p.setString(1, m.destination());
      p.setString(2, m.key());
      p.setString(3, m.type());
      p.setBytes(4, m.payload());
      p.setString(5, m.contentType());
      p.setString(6, Events.TRACEPARENT);
      p.executeQuery().close();
    }
  }
}
