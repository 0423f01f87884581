package io.txbox.server;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.cdc.LogicalReplication;
import io.txbox.cdc.SlotGap;
import io.txbox.cdc.SlotStatus;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code txbox logical status|drop}: the replication slot of {@code relay --source logical}. */
@Command(name = "logical", mixinStandardHelpOptions = true,
    description = "The replication slot that relay --source logical streams (txbox migrate --logical creates it).",
    subcommands = {LogicalCommand.Status.class, LogicalCommand.Drop.class, LogicalCommand.AcknowledgeGap.class})
final class LogicalCommand {

  /** {@code txbox logical status}: exit 0 when the slot is usable, 1 when it is missing or lost. */
  @Command(name = "status", mixinStandardHelpOptions = true,
      description = "Prints the slot's state: streamed or not, WAL behind its confirmed position, WAL kept for it."
          + " Exit code 1 when the slot does not exist or the server invalidated it.")
  static final class Status implements Callable<Integer> {
    @Mixin DatabaseOptions database;
    @Mixin LogicalOptions logical;
    @Option(names = "--config", description = "Properties file with option values.") String config;
    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (HikariDataSource ds = database.pool()) {
        database.checkDatabase(ds);
        LogicalReplication replication = logical.replication(ds, database.outboxStore(ds));
        Optional<SlotStatus> status = replication.status();
        var out = spec.commandLine().getOut();
        if (status.isEmpty()) {
          out.println("slot " + logical.slot + " does not exist: create it with txbox migrate --logical");
          out.flush();
          return 1;
        }
        SlotStatus s = status.get();
        String position = s.beingCreated() ? ""
            : String.format(", confirmed %s, %,d bytes behind", s.confirmedLsn(), s.lagBytes());
        out.printf("slot %s: %s, wal_status %s%s, %,d bytes of WAL kept%n", s.slot(), s.state(), s.walStatus(),
            position, s.retainedBytes());
        if (s.invalidated()) {
          out.println("the server invalidated this slot: see the runbook, \"A lost replication slot\"");
        }
        out.flush();
        return s.invalidated() ? 1 : 0;
      }
    }
  }

  /**
   * {@code txbox logical acknowledge-gap}: forgets the range of WAL messages a failover lost (see
   * {@code SlotGap}), once they were sent again or are known not to matter.
   */
  @Command(name = "acknowledge-gap", mixinStandardHelpOptions = true,
      description = "Forgets the range of events written as WAL messages that a failover lost (txbox status names it),"
          + " once they were sent again from their source. Dry run unless --execute.")
  static final class AcknowledgeGap implements Callable<Integer> {
    @Mixin DatabaseOptions database;
    @Mixin LogicalOptions logical;
    @Option(names = "--config", description = "Properties file with option values.") String config;
    @Option(names = "--execute", description = "Forget it; without it, only says what would be forgotten.")
    boolean execute;
    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (HikariDataSource ds = database.pool()) {
        database.checkDatabase(ds);
        LogicalReplication replication = logical.replication(ds, database.outboxStore(ds));
        var out = spec.commandLine().getOut();
        Optional<SlotGap> gap = replication.gap();
        if (gap.isEmpty()) {
          out.println("slot " + logical.slot + " has no gap to acknowledge");
        } else if (!execute) {
          out.println("would forget: " + gap.get().describe() + ". Run again with --execute");
        } else {
          replication.acknowledgeGap();
          out.println("forgot the gap of slot " + logical.slot + " (" + gap.get().fromLsn() + " to "
              + gap.get().toLsn() + ")");
        }
        out.flush();
        return 0;
      }
    }
  }

  /** {@code txbox logical drop}: removes slot and publication; the relays must be stopped. */
  @Command(name = "drop", mixinStandardHelpOptions = true,
      description = "Drops the slot and the publication. Stop the relays of the slot first. Dry run unless --execute.")
  static final class Drop implements Callable<Integer> {
    @Mixin DatabaseOptions database;
    @Mixin LogicalOptions logical;
    @Option(names = "--config", description = "Properties file with option values.") String config;
    @Option(names = "--execute", description = "Drop them; without it, only says what would be dropped.")
    boolean execute;
    @Spec CommandSpec spec;

    @Override
    public Integer call() {
      try (HikariDataSource ds = database.pool()) {
        database.checkDatabase(ds);
        LogicalReplication replication = logical.replication(ds, database.outboxStore(ds));
        var out = spec.commandLine().getOut();
        if (!execute) {
          out.println("would drop slot " + logical.slot + " and publication " + logical.publication
              + "; WAL messages not yet relayed are lost with the slot. Run again with --execute");
        } else {
          replication.drop();
          out.println("dropped slot " + logical.slot + " and publication " + logical.publication);
        }
        out.flush();
        return 0;
      }
    }
  }
}
