package io.txbox.server;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.jdbc.PostgresOutboxStore;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code txbox migrate}: creates or upgrades the outbox tables. */
@Command(name = "migrate", mixinStandardHelpOptions = true,
    description = "Creates or upgrades the txbox tables. Safe to run twice, and from several instances at once.")
final class MigrateCommand implements Callable<Integer> {
  @Mixin DatabaseOptions database;

  @Option(names = "--buckets", defaultValue = "" + PostgresOutboxStore.DEFAULT_BUCKETS,
      description = "Buckets to split the log into, fixed once the tables exist: the most relay"
          + " instances that share the work. Default: ${DEFAULT-VALUE}.")
  int buckets;

  @Option(names = "--config", description = "Properties file with option values (batch-size=500).")
  String config;

  @Override
  public Integer call() {
    try (HikariDataSource ds = database.pool()) {
      PostgresOutboxStore store = database.store(ds).buckets(buckets).build();
      database.checkConnection(ds);
      int applied = store.migrate();
      System.out.println(applied == 0
          ? "txbox tables in schema " + database.schema + " are up to date"
          : "applied " + applied + " txbox schema version(s) to schema " + database.schema);
      return 0;
    }
  }
}
