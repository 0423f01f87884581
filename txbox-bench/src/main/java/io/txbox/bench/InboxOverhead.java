package io.txbox.bench;

import io.txbox.Message;
import io.txbox.postgres.PostgresInboxStore;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Handler transactions per second with and without the inbox record, 8 threads, side by side in
 * interleaved rounds, with the event read as its current version or upcast from version 1 by
 * txbox-jackson; then again with millions of records already in the inbox.
 */
@Command(name = "inbox", description = "Inbox overhead: handler tx/s with and without the inbox record, on an empty and a full inbox.")
final class InboxOverhead implements Callable<Integer> {
  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--threads", defaultValue = "8")
  int threads;

  @Option(names = "--seconds", defaultValue = "10")
  int seconds;

  @Option(names = "--rounds", defaultValue = "3")
  int rounds;

  @Option(names = "--prefill", defaultValue = "10000000", description = "Inbox records for the second measurement.")
  int prefill;

  @Override
  public Integer call() throws Exception {
    Results results = new Results("inbox-overhead", "java -jar txbox-bench/target/txbox-bench.jar inbox");
    results.setting("threads", threads);
    results.setting("secondsPerMeasurement", seconds);
    results.setting("rounds", rounds);
    results.setting("statistic", "median of rounds");
    results.setting("handler", "one INSERT of an order row, the side effect");
    try (BenchDatabase db = new BenchDatabase(jdbcUrl, threads + 2)) {
      db.store().build().migrate();
      PostgresInboxStore inbox = PostgresInboxStore.builder().schema(BenchDatabase.SCHEMA).build();
      Map<String, TransactionRate.Work> variants = new LinkedHashMap<>();
      variants.put("handler only", WriteOverhead::insertOrder);
      variants.put("inbox record + handler", (c, n) -> {
        inbox.record(c, "inventory", Message.newId());
        WriteOverhead.insertOrder(c, n);
      });
      Map<String, TransactionRate.Work> evolved = new LinkedHashMap<>(variants);
      evolved.put("inbox record + read v3 + handler", (c, n) -> {
        inbox.record(c, "inventory", Message.newId());
        EvolvedOrders.TYPES.read(EvolvedOrders.V3);
        WriteOverhead.insertOrder(c, n);
      });
      evolved.put("inbox record + read v1 as v3 + handler", (c, n) -> {
        inbox.record(c, "inventory", Message.newId());
        EvolvedOrders.TYPES.read(EvolvedOrders.V1);
        WriteOverhead.insertOrder(c, n);
      });
      compare(db, evolved, results, "empty inbox");
      readCost(results);
      System.out.printf("writing %,d inbox records...%n", prefill);
      for (int done = 0; done < prefill; done += 1_000_000) {
        int n = Math.min(1_000_000, prefill - done);
        // time-ordered ids, as UUIDv7 message ids are
        db.execute("INSERT INTO " + BenchDatabase.SCHEMA + ".txbox_inbox (consumer, message_id, processed_at)"
            + " SELECT 'inventory', ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, now()"
            + " FROM generate_series(" + (done + 1) + ", " + (done + n) + ") AS g");
      }
      db.execute("VACUUM ANALYZE " + BenchDatabase.SCHEMA + ".txbox_inbox");
      compare(db, variants, results, String.format("%,d records in the inbox", prefill));
    }
    results.publish(Path.of("txbox-bench", "results"));
    return 0;
  }

  /**
   * The CPU time of reading one event, current version against version 1 upcast to 3, on one
   * thread: in the transactions above it drowns in the database's noise.
   */
  private void readCost(Results results) {
    int events = 200_000;
    Map<String, List<Double>> micros = new LinkedHashMap<>();
    Map<String, io.txbox.Message> messages = Map.of("read v3", EvolvedOrders.V3, "read v1 as v3", EvolvedOrders.V1);
    for (int round = 0; round <= rounds + 1; round++) { // the first two rounds warm up
      for (String variant : List.of("read v3", "read v1 as v3")) {
        long start = System.nanoTime();
        for (int i = 0; i < events; i++) {
          EvolvedOrders.TYPES.read(messages.get(variant));
        }
        double us = (System.nanoTime() - start) / 1_000.0 / events;
        if (round >= 2) {
          micros.computeIfAbsent(variant, v -> new ArrayList<>()).add(us);
          System.out.printf("read cost, round %d  %-16s %6.2f µs/event%n", round - 1, variant, us);
        }
      }
    }
    double current = WriteOverhead.median(micros.get("read v3"));
    results.add("read v3, one thread", current, "µs/event");
    results.add("read v1 as v3, one thread", WriteOverhead.median(micros.get("read v1 as v3")), "µs/event",
        "read v3, one thread", current);
  }

  private void compare(BenchDatabase db, Map<String, TransactionRate.Work> variants, Results results, String label)
      throws Exception {
    Map<String, List<Double>> rates = new LinkedHashMap<>();
    for (var v : variants.entrySet()) {
      TransactionRate.measure(db.dataSource, threads, 3, v.getValue()); // warm-up
      rates.put(v.getKey(), new ArrayList<>());
    }
    for (int round = 1; round <= rounds; round++) {
      for (var v : variants.entrySet()) {
        double rate = TransactionRate.measure(db.dataSource, threads, seconds, v.getValue());
        rates.get(v.getKey()).add(rate);
        System.out.printf("%s, round %d  %-24s %,10.0f tx/s%n", label, round, v.getKey(), rate);
      }
    }
    double bare = WriteOverhead.median(rates.get("handler only"));
    results.add(label + ": handler only", bare, "tx/s");
    double recorded = WriteOverhead.median(rates.get("inbox record + handler"));
    results.add(label + ": inbox record + handler", recorded, "tx/s", "handler only", bare);
    if (rates.containsKey("inbox record + read v3 + handler")) {
      double current = WriteOverhead.median(rates.get("inbox record + read v3 + handler"));
      results.add(label + ": inbox record + read v3 + handler", current, "tx/s", "inbox record + handler", recorded);
      results.add(label + ": inbox record + read v1 as v3 + handler",
          WriteOverhead.median(rates.get("inbox record + read v1 as v3 + handler")), "tx/s",
          "inbox record + read v3 + handler", current);
    }
  }
}
