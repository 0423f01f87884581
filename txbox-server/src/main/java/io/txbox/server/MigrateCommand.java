package io.txbox.server;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.jdbc.MigrationScript;
import io.txbox.jdbc.PostgresOutboxStore;
import io.txbox.mariadb.MariaDbOutboxStore;
import java.util.concurrent.Callable;
import org.mariadb.jdbc.MariaDbDataSource;
import org.postgresql.ds.PGSimpleDataSource;
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

  @Option(names = "--buckets", defaultValue = "" + PostgresOutboxStore.DEFAULT_BUCKETS,
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
    if (database.isMariaDb()) {
      return migrateMariaDb();
    }
    if (printSql) {
      // The store reads no database to render its scripts: a data source that never connects.
      PostgresOutboxStore store = PostgresOutboxStore.builder(new PGSimpleDataSource())
          .schema(database.schema).tablePrefix(database.tablePrefix).buckets(buckets).build();
      for (MigrationScript script : store.migrationScripts()) {
        spec.commandLine().getOut().println("-- txbox " + script.name() + "\n" + script.sql());
      }
      spec.commandLine().getOut().flush();
      return 0;
    }
    try (HikariDataSource ds = database.pool()) {
      PostgresOutboxStore store = database.store(ds).buckets(buckets).outboxPartitionSize(partitionSize).build();
      database.checkConnection(ds);
      int applied = store.migrate();
      if (logical) {
        logicalOptions.replication(ds, store).migrate();
        System.out.println("replication slot " + logicalOptions.slot + " and publication "
            + logicalOptions.publication + " are ready");
      }
      System.out.println(applied == 0
          ? "txbox tables in schema " + database.schema + " are up to date"
          : "applied " + applied + " txbox schema version(s) to schema " + database.schema);
      return 0;
    }
  }

  /** MariaDB: one script, no partitions, no logical decoding; the tables live in the URL's database. */
  private Integer migrateMariaDb() {
    database.refusePostgresOnlyOptions(spec);
    TxboxCommand.refuseGiven(spec, "apply to PostgreSQL only: drop them", "--outbox-partition-size", "--logical");
    if (printSql) {
      // The store reads no database to render its script: a data source that never connects.
      MariaDbOutboxStore store = MariaDbOutboxStore.builder(new MariaDbDataSource())
          .tablePrefix(database.tablePrefix).buckets(buckets).build();
      spec.commandLine().getOut().println("-- txbox MariaDB schema\n" + store.migrationScript());
      spec.commandLine().getOut().flush();
      return 0;
    }
    try (HikariDataSource ds = database.poolOnPostgresOrMariaDb()) {
      MariaDbOutboxStore store = database.mariaDbStore(ds).buckets(buckets).build();
      database.checkConnection(ds);
      store.migrate();
      System.out.println("txbox tables (" + store.outboxTable() + " and the rest) are ready in the database"
          + " the URL names");
      return 0;
    }
  }
}
