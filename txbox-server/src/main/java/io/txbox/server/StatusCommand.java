package io.txbox.server;

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.zaxxer.hikari.HikariDataSource;
import io.txbox.TxboxException;
import io.txbox.cdc.SlotStatus;
import io.txbox.jdbc.ServerConnections;
import io.txbox.jdbc.StoreStatus;
import io.txbox.jdbc.spi.Database.Capability;
import io.txbox.spi.support.Secrets;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code txbox status}: is delivery moving, who relays what, what is stuck and why. Exit 0 when
 * healthy, 1 when degraded (events waiting and no relay ever started, a subscription with pending
 * events and no relay, a bucket retrying, an event pending longer than {@code --max-pending-age},
 * a replication slot of these tables that no relay streams or that the server invalidated), 2
 * when a setting is wrong (such as a {@code --schema} without txbox tables), 3 when the database
 * cannot be read: so scripts and probes can tell "degraded" from "could not look". Dead letters
 * and an old open transaction are reported; they do not by themselves stop delivery.
 */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = "Subscriptions, replication slots, relays, stalled buckets, dead letters and the transaction"
        + " holding delivery back. Exit 0 when healthy, 1 when degraded, 2 when a setting is wrong, 3 when the"
        + " database cannot be read.")
final class StatusCommand implements Callable<Integer> {
  /**
   * Every character outside ASCII as {@code \\uXXXX}: an error or a query text may hold a bidi
   * override or a terminal escape, and the JSON is read in terminals as often as by programs.
   */
  private static final ObjectMapper JSON = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT)
      .enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();
  @Mixin DatabaseOptions database;

  @Option(names = "--json", description = "Prints the status as JSON.")
  boolean json;

  @Option(names = "--max-pending-age", defaultValue = "5m", converter = DurationConverter.class,
      description = "Oldest pending age past which the status is degraded. Default: ${DEFAULT-VALUE}.")
  Duration maxPendingAge;

  @Option(names = "--limit-per-bucket", defaultValue = "1000",
      description = "Events counted per bucket at most (the count is what costs). Default: ${DEFAULT-VALUE}.")
  int limitPerBucket;

  @Option(names = "--config", description = "Properties file with option values.")
  String config;

  @Spec CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    if (limitPerBucket < 1 || limitPerBucket > 1_000_000) {
      throw new IllegalArgumentException("invalid --limit-per-bucket: must be between 1 and 1000000, was " + limitPerBucket);
    }
    try (HikariDataSource ds = database.operatorPool(spec)) {
      return report(ds);
    } catch (TxboxException e) {
      spec.commandLine().getErr().println("status: " + Secrets.mask(e.getMessage()));
      return CANNOT_READ;
    }
  }

  /** Exit code when the database cannot be read, apart from "degraded". */
  static final int CANNOT_READ = 3;

  private int report(HikariDataSource ds) throws Exception {
    database.checkDatabase(ds);
    StatusReport report = StatusReport.read(ds, database.outboxStore(ds), limitPerBucket, maxPendingAge);
    Optional<ServerConnections> connections = database.database().has(Capability.POOLER_DETECTION)
        ? Optional.of(ServerConnections.of(ds, database.database())) : Optional.empty();
    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      Map<String, Object> document = asJson(report.status(), report.problems());
      document.put("slots", report.slots().stream().map(StatusCommand::asJson).toList());
      connections.ifPresent(c -> document.put("databaseConnections", c.name()));
      out.println(JSON.writeValueAsString(document));
    } else {
      connections.filter(c -> c == ServerConnections.PER_TRANSACTION).ifPresent(c -> out.println(
          "database connections: lent per transaction by a pooler (PgBouncer in transaction mode, RDS Proxy):"
              + " txbox uses no server-side prepared statements there, and a relay behind it is woken at each"
              + " commit only with --listen-jdbc-url (else it polls)"));
      printText(out, report.status(), report.slots(), report.problems());
    }
    out.flush();
    return report.healthy() ? 0 : 1;
  }

  private static void printText(PrintWriter out, StoreStatus status, List<SlotStatus> slots, List<String> problems) {
    if (status.subscriptions().isEmpty() && slots.isEmpty()) {
      out.println("no subscription yet: no relay has started on these tables" + status.waitingForFirstRelay()
          .filter(b -> b.pending() > 0).map(b -> "; " + b.pending() + (b.capped() ? "+" : "") + " events wait for one")
          .orElse(""));
    }
    Set<String> slotNames = slots.stream().map(SlotStatus::slot).collect(Collectors.toSet());
    for (SlotStatus s : slots) {
      String behind = s.beingCreated() ? "" : String.format(", %,d bytes behind", s.lagBytes());
      out.printf("slot %s: %s, wal_status %s%s, %,d bytes of WAL kept%n", TerminalText.of(s.slot()), s.state(),
          s.walStatus(), behind, s.retainedBytes());
    }
    for (StoreStatus.Subscription s : status.subscriptions()) {
      if (slotNames.contains(s.name())) {
        continue; // a slot's subscription only keeps the janitor from waiting for it
      }
      out.printf("subscription %s: %s pending%s, %d buckets (%d held by no relay), %d relay(s)%n", TerminalText.of(s.name()), pending(s),
          s.pending() > 0 ? " (oldest " + s.oldestPendingAge() + ")" : "", s.buckets(), s.unownedBuckets(), s.relays().size());
      for (StoreStatus.RelayInstance r : s.relays()) {
        out.printf("  relay %s: %d buckets, lease until %s%n", TerminalText.of(r.instance()), r.buckets(), r.leaseUntil());
      }
    }
    Instant now = Instant.now();
    for (StoreStatus.FencedRelay r : status.fencedRelays()) {
      out.printf("fenced: subscription %s relay %s: %d time(s), last at %s%s%n", TerminalText.of(r.subscription()),
          TerminalText.of(r.instance()), r.fences(), r.lastFencedAt(),
          r.repeatedly(now) ? ": it keeps losing its buckets while it works them (pauses longer than its lease?)" : "");
    }
    if (status.stalledBuckets().isEmpty()) {
      out.println("stalled buckets: none");
    }
    for (StoreStatus.StalledBucket b : status.stalledBuckets()) {
      out.printf("stalled: subscription %s bucket %d (relay %s): %d attempts, next at %s, last error: %s%n",
          TerminalText.of(b.subscription()), b.bucket(), TerminalText.of(b.owner()), b.attempts(), b.nextAttemptAt(),
          TerminalText.of(b.lastError()));
    }
    for (StoreStatus.IdleBucket b : status.idleBuckets()) {
      out.printf("not moving: subscription %s bucket %d (relay %s): checkpoint last saved %s, events waiting%n",
          TerminalText.of(b.subscription()), b.bucket(), TerminalText.of(b.owner()), b.checkpointSavedAt());
    }
    if (status.outboxDeadLetters().isEmpty() && status.inboxDeadLetters().isEmpty()) {
      out.println("dead letters: none");
    }
    for (StoreStatus.OutboxDeadLetters d : status.outboxDeadLetters()) {
      out.printf("dead letters: subscription %s: %d (newest %s: %s)%n", TerminalText.of(d.subscription()), d.count(), d.newest(),
          TerminalText.of(d.newestError()));
    }
    for (StoreStatus.InboxDeadLetters d : status.inboxDeadLetters()) {
      out.printf("dead letters: consumer %s: %d dead, %d parked behind them, %d key(s)%n", TerminalText.of(d.consumer()), d.dead(),
          d.parked(), d.keys());
    }
    out.println(status.oldestOpenTransaction()
        .map(t -> "oldest open transaction: pid " + t.pid() + ", open " + t.age() + ", " + TerminalText.of(t.description())
            + "\n  its query: " + TerminalText.of(Secrets.maskSql(t.query())))
        .orElse("oldest open transaction: none open " + StoreStatus.OPEN_TRANSACTION_SHOWN_AFTER.toSeconds()
            + " s or longer"));
    status.outboxPartitions().ifPresent(p -> out.printf(
        "outbox partitions: %d (%d ahead of the writers), %d row(s) in the default partition%n",
        p.partitions(), p.ahead(), p.rowsInDefault()));
    out.println(problems.isEmpty() ? "HEALTHY" : "DEGRADED: " + TerminalText.of(String.join("; ", problems)));
  }

  private static Map<String, Object> asJson(StoreStatus status, List<String> problems) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("healthy", problems.isEmpty());
    json.put("problems", problems);
    json.put("subscriptions", status.subscriptions().stream().map(s -> {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("name", s.name());
      m.put("pending", s.pending());
      m.put("pendingCapped", s.capped());
      m.put("oldestPendingAge", s.oldestPendingAge().toString());
      m.put("buckets", s.buckets());
      m.put("unownedBuckets", s.unownedBuckets());
      m.put("relays", s.relays().stream().map(r -> Map.of("instance", r.instance(), "buckets", r.buckets(),
          "leaseUntil", text(r.leaseUntil()))).toList());
      return m;
    }).toList());
    json.put("stalledBuckets", status.stalledBuckets().stream().map(b -> {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("subscription", b.subscription());
      m.put("bucket", b.bucket());
      m.put("relay", b.owner());
      m.put("attempts", b.attempts());
      m.put("nextAttemptAt", text(b.nextAttemptAt()));
      m.put("lastError", b.lastError());
      return m;
    }).toList());
    json.put("idleBuckets", status.idleBuckets().stream().map(b -> Map.of("subscription", b.subscription(),
        "bucket", b.bucket(), "relay", b.owner(), "checkpointSavedAt", text(b.checkpointSavedAt()))).toList());
    json.put("fencedRelays", status.fencedRelays().stream().map(r -> Map.of("subscription", r.subscription(),
        "relay", r.instance(), "fences", r.fences(), "lastFencedAt", text(r.lastFencedAt()))).toList());
    json.put("outboxDeadLetters", status.outboxDeadLetters().stream().map(d -> Map.of("subscription", d.subscription(),
        "count", d.count(), "newest", text(d.newest()), "newestError", String.valueOf(d.newestError()))).toList());
    json.put("inboxDeadLetters", status.inboxDeadLetters().stream().map(d -> Map.of("consumer", d.consumer(),
        "dead", d.dead(), "parked", d.parked(), "keys", d.keys())).toList());
    json.put("oldestOpenTransaction", status.oldestOpenTransaction().map(t -> {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("pid", t.pid());
      m.put("age", t.age().toString());
      m.put("user", t.user());
      m.put("database", t.database());
      m.put("application", t.application());
      m.put("state", t.state());
      m.put("query", Secrets.maskSql(t.query()));
      return m;
    }).orElse(null));
    json.put("outboxPartitions", status.outboxPartitions().map(p -> Map.of("partitions", p.partitions(),
        "ahead", p.ahead(), "rowsInDefault", p.rowsInDefault())).orElse(null));
    return json;
  }

  private static Map<String, Object> asJson(SlotStatus s) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("slot", s.slot());
    m.put("active", s.active());
    m.put("beingCreated", s.beingCreated());
    m.put("walStatus", s.walStatus());
    m.put("confirmedLsn", s.confirmedLsn());
    m.put("lagBytes", s.beingCreated() ? null : s.lagBytes());
    m.put("retainedBytes", s.retainedBytes());
    return m;
  }

  private static String pending(StoreStatus.Subscription s) {
    return s.pending() + (s.capped() ? "+" : "");
  }

  private static String text(Instant instant) {
    return instant == null ? "" : instant.toString();
  }
}
