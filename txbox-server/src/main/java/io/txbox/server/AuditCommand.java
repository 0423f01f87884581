package io.txbox.server;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.jdbc.DeadLetters;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code txbox audit}: who retried, discarded or replayed what, and when, dry runs included; newest first. */
@Command(name = "audit", mixinStandardHelpOptions = true,
    description = "Shows every retry and discard of dead letters and every replay, dry runs included, newest first.")
final class AuditCommand implements Callable<Integer> {
  @Mixin DatabaseOptions database;

  @Option(names = "--limit", defaultValue = "50", description = "Most entries shown, 1 to 10000. Default: ${DEFAULT-VALUE}.")
  int limit;

  @Option(names = "--config", description = "Properties file with option values.")
  String config;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    if (limit < 1 || limit > 10_000) {
      throw new IllegalArgumentException("invalid --limit: must be between 1 and 10000, was " + limit);
    }
    try (HikariDataSource ds = database.operatorPool(spec)) {
      database.checkDatabase(ds);
      PrintWriter out = spec.commandLine().getOut();
      for (DeadLetters.AuditEntry e : database.operatorStore(ds).deadLetters().audit(limit)) {
        out.printf("%s %s %s %s%s: %d message(s), %s%n", e.at(), TerminalText.of(e.operator()), e.action(), e.target(),
            e.dryRun() ? " (dry run)" : "", e.count(), TerminalText.of(e.scope()));
      }
      out.flush();
      return 0;
    }
  }
}
