package io.txbox.server;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.jdbc.JdbcOutboxStore;
import io.txbox.jdbc.MigrationScript;
import io.txbox.jdbc.spi.Database;
import io.txbox.jdbc.spi.Database.Capability;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code txbox migrate}: creates or upgrades the outbox tables. */
@Command(name = "migrate", mixinStandardHelpOptions = true,
    description = "Creates or upgrades the txbox tables. Safe to run twice, and from several instances at once.")
final class MigrateCommand implements Callable<Integer> {
  @Mixin DatabaseOptions database;

  @Option(names = "--buckets", defaultValue = "" + Database.OutboxSettings.DEFAULT_BUCKETS,
      description = "Buckets to split the log into, fixed once the tables exist: the most relay"
          + " instances that share the work. Default: ${DEFAULT-VALUE}.")
  int buckets;

  @Option(names = "--outbox-partition-size", defaultValue = "0",
      description = "Partitions the outbox table by position, this many positions a partition (keeping its"
          + " rows), so that the janitor drops whole partitions instead of deleting rows. 0 leaves the table"
          + " as it is. Default: ${DEFAULT-VALUE}.")
  long partitionSize;

  @Option(names = "--config", description = "Properties file with option values (batch-size=500).")
  String config;

  @Option(names = "--print-sql", description = "Prints the SQL of every version, with the schema, table"
      + " prefix and bucket count filled in, for Flyway, Liquibase or a DBA; touches no database.")
  boolean printSql;

  @Option(names = "--logical", description = "Also create the replication slot and publication for relay"
      + " --source logical, and the SQL function <schema>.<prefix>emit; needs wal_level = logical.")
  boolean logical;

  @Mixin LogicalOptions logicalOptions;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    if (printSql && partitionSize > 0) {
      throw new ParameterException(spec.commandLine(), "--print-sql prints the versions only: partitioning"
          + " depends on the table's current state, so run `txbox migrate --outbox-partition-size "
          + partitionSize + "` against the database after the scripts");
    }
    Database db = database.database();
    refuseWhatTheDatabaseLacks();
    Database.OutboxSettings settings = Database.OutboxSettings.of(database.tables(), buckets);
    if (partitionSize != 0) { // a negative size reaches the store, which names the setting and its range
      settings = settings.withPartitions(partitionSize, null);
    }
    if (printSql) {
      for (MigrationScript script : db.migrationScripts(settings)) {
        spec.commandLine().getOut().println("-- txbox " + script.name() + "\n" + script.sql());
      }
      spec.commandLine().getOut().flush();
      return 0;
    }
    try (HikariDataSource ds = database.poolOnAnyDatabase()) {
      JdbcOutboxStore store = db.outboxStore(ds, settings);
      database.checkConnection(ds);
      int applied = store.migrate();
      if (logical) {
        logicalOptions.replication(ds, store).migrate();
        System.out.println("replication slot " + logicalOptions.slot + " and publication "
            + logicalOptions.publication + " are ready");
      }
      System.out.println(applied == 0
          ? "txbox tables (" + store.operator().outboxTable() + " and the rest) are up to date"
          : "applied " + applied + " txbox schema version(s) (" + store.operator().outboxTable() + " and the rest)");
      return 0;
    }
  }

  /** The options that name what the URL's database cannot do, refused by capability and by name. */
  private void refuseWhatTheDatabaseLacks() {
    database.refuseWhatTheDatabaseLacks(spec);
    database.refuseGiven(spec, Capability.PARTITIONS, "--outbox-partition-size");
    database.refuseGiven(spec, Capability.LOGICAL_DECODING, "--logical");
  }
}
