package io.txbox.server;

import com.zaxxer.hikari.HikariDataSource;
import io.txbox.Inbox;
import io.txbox.ParkedMessage;
import io.txbox.jdbc.DeadLetters;
import io.txbox.jdbc.OperatorStore;
import io.txbox.jdbc.Scope;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code txbox dead-letters list | show | retry | discard}: the outbox's dead letters by scope, or
 * with {@code --consumer} a consumer's dead and parked messages. Anything that touches more than
 * one message is a dry run (the count and a sample) unless {@code --execute} is given; every retry
 * and discard, dry runs included, is recorded in the audit table ({@code txbox audit}).
 */
@Command(name = "dead-letters", mixinStandardHelpOptions = true,
    description = "Lists, shows, retries and discards dead letters; a retry or discard is a dry run without --execute.",
    subcommands = {DeadLettersCommand.ListCommand.class, DeadLettersCommand.ShowCommand.class,
        DeadLettersCommand.RetryCommand.class, DeadLettersCommand.DiscardCommand.class})
final class DeadLettersCommand {
  /** Messages shown by a dry run. */
  static final int SAMPLE = 5;
  /** Most messages {@code list} prints. */
  static final int MAX_LIST = 10_000;

  /** Which dead letters: the options every subcommand shares. */
  static final class ScopeOptions {
    @Option(names = "--subscription", description = "Outbox: the subscription that gave up.")
    String subscription;

    @Option(names = "--type", description = "Outbox: the event type.")
    String type;

    @Option(names = "--destination", description = "Outbox: the destination.")
    String destination;

    @Option(names = "--key", description = "The event key; with --consumer, the parked key.")
    String key;

    @Option(names = "--since", converter = InstantConverter.class, description = "Outbox: dead-lettered at or after this instant (2026-11-23T10:00:00Z).")
    Instant since;

    @Option(names = "--until", converter = InstantConverter.class, description = "Outbox: dead-lettered before this instant.")
    Instant until;

    @Option(names = "--error", description = "Outbox: text the error contains.")
    String error;

    @Option(names = "--id", description = "The event id: one message.")
    UUID id;

    @Option(names = "--consumer", description = "A consumer's dead and parked messages instead of the outbox's.")
    String consumer;

    @Option(names = "--config", description = "Properties file with option values.")
    String config;

    Scope scope() {
      return Scope.ALL.withSubscription(subscription).withDestination(destination).withType(type).withKey(key)
          .withPeriod(since, until).withErrorContaining(error).withId(id);
    }

    /**
     * With {@code --consumer}, refuses the outbox's filters: a consumer's messages are chosen by
     * key (and, to show one, by id) only, and a filter silently dropped would widen a discard.
     */
    void checkConsumerScope(boolean idApplies) {
      List<String> given = new ArrayList<>();
      addIf(given, subscription, "--subscription");
      addIf(given, type, "--type");
      addIf(given, destination, "--destination");
      addIf(given, since, "--since");
      addIf(given, until, "--until");
      addIf(given, error, "--error");
      if (!idApplies) {
        addIf(given, id, "--id");
      }
      if (!given.isEmpty()) {
        throw new IllegalArgumentException("invalid " + String.join(", ", given) + ": with --consumer, messages are"
            + " chosen by --key" + (idApplies ? " and --id" : "") + " only: drop " + String.join(", ", given));
      }
    }

    private static void addIf(List<String> given, Object value, String option) {
      if (value != null) {
        given.add(option);
      }
    }
  }

  /** What every subcommand does first: connect, and reach the dead letters. */
  abstract static class Action implements Callable<Integer> {
    @Mixin DatabaseOptions database;
    @Mixin ScopeOptions scope;
    @Mixin OperatorOptions operator;
    @Spec CommandSpec spec;
    /** Who runs this, for the audit log; checked before anything runs. */
    String who;

    @Override
    public Integer call() throws Exception {
      if (scope.consumer != null) {
        scope.checkConsumerScope(this instanceof ShowCommand);
      }
      who = operator.who();
      try (HikariDataSource ds = database.operatorPool(spec)) {
        database.checkDatabase(ds);
        OperatorStore store = database.operatorStore(ds);
        PrintWriter out = spec.commandLine().getOut();
        int code = scope.consumer == null ? outbox(store.deadLetters(), out) : inbox(ds, store, out);
        out.flush();
        return code;
      }
    }

    abstract int outbox(DeadLetters deadLetters, PrintWriter out);

    abstract int inbox(HikariDataSource ds, OperatorStore store, PrintWriter out) throws Exception;

    Inbox inbox(HikariDataSource ds) {
      return Inbox.create(ds, database.inboxStore());
    }

    List<ParkedMessage> parkedKey(Inbox inbox) throws Exception {
      return inbox.parked(scope.consumer, Inbox.MAX_PARKED_LISTED).stream()
          .filter(p -> scope.key == null || p.queueKey().equals(scope.key)).toList();
    }

    /** One line per dead letter; what events and brokers wrote is shown with its controls escaped. */
    static void print(PrintWriter out, DeadLetters.Entry e) {
      out.printf("%s %s #%d %s %s v%d key=%s to %s, %d attempts, %d bytes: %s%n", e.deadLetteredAt(),
          TerminalText.of(e.subscription()), e.position(), e.id(), TerminalText.of(e.type()), e.version(),
          TerminalText.of(e.key()), TerminalText.of(e.destination()), e.attempts(), e.payloadBytes(),
          TerminalText.of(e.error()));
    }

    static void print(PrintWriter out, ParkedMessage p) {
      out.printf("%s key=%s %s %s %s, %d attempts%s%n", p.receivedAt(), TerminalText.of(p.queueKey()),
          p.dead() ? "DEAD  " : "parked", p.message().id(), TerminalText.of(p.message().type()), p.attempts(),
          p.lastError() == null ? "" : ": " + TerminalText.of(p.lastError()));
    }

    /**
     * Without {@code --execute}, whatever the count: prints the count and a sample, records the dry
     * run, and says so.
     */
    boolean dryRun(DeadLetters deadLetters, PrintWriter out, Scope s, String action, boolean execute) {
      if (execute) {
        return false;
      }
      long count = deadLetters.count(s);
      out.printf("dry run: %s would touch %d dead letter(s) (%s); add --execute to do it. Sample:%n", action, count,
          TerminalText.of(s.describe()));
      deadLetters.list(s, SAMPLE).forEach(e -> print(out, e));
      deadLetters.record(who, action, "outbox", s.describe(), count, true);
      return true;
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true, description = "Lists the dead letters of a scope, oldest first.")
  static final class ListCommand extends Action {
    @Option(names = "--limit", defaultValue = "50", description = "Most listed, 1 to " + MAX_LIST + ". Default: ${DEFAULT-VALUE}.")
    int limit;

    @Override
    int outbox(DeadLetters deadLetters, PrintWriter out) {
      checkLimit();
      Scope s = scope.scope();
      out.printf("%d dead letter(s) of the outbox (%s)%n", deadLetters.count(s), TerminalText.of(s.describe()));
      deadLetters.list(s, limit).forEach(e -> print(out, e));
      return 0;
    }

    @Override
    int inbox(HikariDataSource ds, OperatorStore store, PrintWriter out) throws Exception {
      checkLimit();
      List<ParkedMessage> parked = parkedKey(inbox(ds));
      out.printf("%d dead or parked message(s) of consumer %s%n", parked.size(), TerminalText.of(scope.consumer));
      parked.stream().limit(limit).forEach(p -> print(out, p));
      return 0;
    }

    private void checkLimit() {
      if (limit < 1 || limit > MAX_LIST) {
        throw new IllegalArgumentException("invalid --limit: must be between 1 and " + MAX_LIST + ", was " + limit);
      }
    }
  }

  @Command(name = "show", mixinStandardHelpOptions = true, description = "Shows one outbox dead letter with its payload.")
  static final class ShowCommand extends Action {
    @Override
    int outbox(DeadLetters deadLetters, PrintWriter out) {
      UUID id = requireId();
      String subscription = scope.subscription == null ? "default" : scope.subscription;
      var shown = deadLetters.show(subscription, id);
      if (shown.isEmpty()) {
        out.printf("no dead letter of event %s in subscription %s%n", id, TerminalText.of(subscription));
        return 1;
      }
      print(out, shown.get().entry());
      out.printf("created at %s, content type %s, headers %s%n", shown.get().createdAt(),
          TerminalText.of(shown.get().contentType()), TerminalText.of(shown.get().headersJson()));
      out.println(TerminalText.of(PayloadText.of(shown.get().payload())));
      return 0;
    }

    @Override
    int inbox(HikariDataSource ds, OperatorStore store, PrintWriter out) throws Exception {
      UUID id = requireId();
      for (ParkedMessage p : inbox(ds).parked(scope.consumer, Inbox.MAX_PARKED_LISTED)) {
        if (p.message().id().equals(id)) {
          print(out, p);
          out.println(TerminalText.of(PayloadText.of(p.message().payload())));
          return 0;
        }
      }
      out.printf("no dead or parked message %s of consumer %s%n", id, TerminalText.of(scope.consumer));
      return 1;
    }

    private UUID requireId() {
      if (scope.id == null) {
        throw new IllegalArgumentException("invalid --id: show needs the event id (txbox dead-letters list shows them)");
      }
      return scope.id;
    }
  }

  @Command(name = "retry", mixinStandardHelpOptions = true,
      description = "Puts outbox dead letters back into the log with their ids; with --consumer, asks the running"
          + " consumer to retry its parked keys in order. A dry run without --execute.")
  static final class RetryCommand extends Action {
    @Option(names = "--execute", description = "Retries; without it, a dry run that changes nothing.")
    boolean execute;

    @Override
    int outbox(DeadLetters deadLetters, PrintWriter out) {
      Scope s = scope.scope();
      if (dryRun(deadLetters, out, s, "retry", execute)) {
        return 0;
      }
      out.printf("retried %d dead letter(s) (%s): they are back in the log%n", deadLetters.retry(s, who),
          TerminalText.of(s.describe()));
      return 0;
    }

    /**
     * Asks the running consumer, which has the handler, to retry the parked keys of the scope:
     * its subscriber takes the request within a second and processes each key in order.
     */
    @Override
    int inbox(HikariDataSource ds, OperatorStore store, PrintWriter out) throws Exception {
      Inbox inbox = inbox(ds);
      List<ParkedMessage> parked = parkedKey(inbox);
      List<String> keys = parked.stream().map(ParkedMessage::queueKey).distinct().toList();
      String described = TerminalText.of("consumer " + scope.consumer
          + (scope.key == null ? ", every parked key" : ", key " + scope.key));
      if (keys.isEmpty()) {
        out.printf("nothing to retry: no parked key (%s)%n", described);
        return 1;
      }
      if (!execute) {
        out.printf("dry run: retry would process %d message(s) of %d key(s) (%s); add --execute to do it. Sample:%n",
            parked.size(), keys.size(), described);
        parked.stream().limit(SAMPLE).forEach(p -> print(out, p));
        store.deadLetters().record(who, "retry", "inbox", described, parked.size(), true);
        return 0;
      }
      int asked = 0;
      for (String key : keys) {
        if (inbox.requestRetry(scope.consumer, key, who)) {
          asked++;
        }
      }
      store.deadLetters().record(who, "retry", "inbox", described, parked.size(), false);
      out.printf("asked consumer %s to retry %d parked key(s), %d message(s): its running subscriber processes each"
          + " key in order within a second or so. Check with: txbox dead-letters list --consumer %s%n",
          TerminalText.of(scope.consumer), asked, parked.size(), TerminalText.of(scope.consumer));
      return 0;
    }
  }

  @Command(name = "discard", mixinStandardHelpOptions = true,
      description = "Deletes outbox dead letters, or a consumer's parked key. A dry run without --execute.")
  static final class DiscardCommand extends Action {
    @Option(names = "--execute", description = "Discards; without it, a dry run that changes nothing.")
    boolean execute;
    @Override
    int outbox(DeadLetters deadLetters, PrintWriter out) {
      Scope s = scope.scope();
      if (dryRun(deadLetters, out, s, "discard", execute)) {
        return 0;
      }
      out.printf("discarded %d dead letter(s) (%s)%n", deadLetters.discard(s, who),
          TerminalText.of(s.describe()));
      return 0;
    }

    @Override
    int inbox(HikariDataSource ds, OperatorStore store, PrintWriter out) throws Exception {
      if (scope.key == null) {
        throw new IllegalArgumentException("invalid --key: discard of a consumer's messages needs the parked key");
      }
      Inbox inbox = inbox(ds);
      List<ParkedMessage> parked = parkedKey(inbox);
      String described = TerminalText.of("consumer " + scope.consumer + ", key " + scope.key);
      if (!execute) {
        out.printf("dry run: discard would drop %d message(s) (%s); add --execute to do it. Sample:%n", parked.size(),
            described);
        parked.stream().limit(SAMPLE).forEach(p -> print(out, p));
        store.deadLetters().record(who, "discard", "inbox", described, parked.size(), true);
        return 0;
      }
      int dropped = inbox.discard(scope.consumer, scope.key);
      store.deadLetters().record(who, "discard", "inbox", described, dropped, false);
      out.printf("discarded %d message(s) (%s); the key flows again%n", dropped, described);
      return 0;
    }
  }
}
