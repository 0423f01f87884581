package io.txbox.bench;

import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.spi.Backlog;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * What the backlog gauges and the health indicator cost the database when nothing is being relayed:
 * the time of one backlog count over a large backlog, for several limits per bucket.
 */
@Command(name = "backlog", description = "Backlog query: ms per count over a large unrelayed backlog, per limit per bucket.")
final class BacklogQuery implements Callable<Integer> {
  @Option(names = "--jdbc-url", defaultValue = "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres")
  String jdbcUrl;

  @Option(names = "--events", defaultValue = "1000000", description = "Unrelayed events in the outbox.")
  int events;

  @Option(names = "--runs", defaultValue = "7")
  int runs;

  @Override
  public Integer call() throws Exception {
    Results results = new Results("backlog-query", "java -jar txbox-bench/target/txbox-bench.jar backlog");
    results.setting("events", events);
    results.setting("buckets", PostgresOutboxStore.DEFAULT_BUCKETS);
    results.setting("statistic", "median of " + runs + " runs after one warm-up");
    try (BenchDatabase db = new BenchDatabase(jdbcUrl, 2)) {
      PostgresOutboxStore store = db.store().build();
      store.migrate();
      store.relay().openSubscription("default");
      System.out.printf("writing %,d events...%n", events);
      db.execute("INSERT INTO " + BenchDatabase.SCHEMA + ".txbox_outbox (key, type, destination, payload)"
              + " SELECT 'key-' || (g % 10000), 'OrderPlaced', 'orders', '\\x00'::bytea"
              + " FROM generate_series(1, " + events + ") AS g",
          "VACUUM ANALYZE " + BenchDatabase.SCHEMA + ".txbox_outbox");
      for (int limit : new int[] {100, 1_000, 10_000, 100_000}) {
        measure(store, limit, results);
      }
    }
    results.publish(Path.of("txbox-bench", "results"));
    return 0;
  }

  private void measure(PostgresOutboxStore store, int limit, Results results) {
    Backlog backlog = store.relay().backlog("default", limit).orElseThrow(); // warm-up
    List<Double> millis = new ArrayList<>();
    for (int run = 0; run < runs; run++) {
      long start = System.nanoTime();
      store.relay().backlog("default", limit);
      millis.add((System.nanoTime() - start) / 1e6);
    }
    double median = WriteOverhead.median(millis);
    System.out.printf("limit %,7d per bucket: counted %,9d%s in %,8.1f ms%n",
        limit, backlog.pending(), backlog.capped() ? "+" : " ", median);
    results.add("limit " + limit + " per bucket: ms per count", median, "ms");
    results.add("limit " + limit + " per bucket: events counted", backlog.pending(), "events");
  }
}
