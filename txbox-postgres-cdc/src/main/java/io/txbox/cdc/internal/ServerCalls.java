package io.txbox.cdc.internal;

import io.txbox.cdc.ServerWait;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The calls to the server the relay's threads are in now, and since when. A call that does not
 * return (a slot made again behind a transaction that stays open, a commit waiting for a
 * synchronous standby that is gone) would otherwise leave the relay silent after its last words:
 * {@link #report()} says so every {@code warnAfter}, and {@link #longest()} gives it to readiness
 * and the meters.
 */
public final class ServerCalls {
  private static final Logger log = LoggerFactory.getLogger(ServerCalls.class);

  /** A call that may not return soon; it throws what the call throws. */
  @FunctionalInterface
  public interface Call<T> {
    T run() throws SQLException;
  }

  /** A call in progress and how many warnings it has had. */
  private static final class InProgress {
    final ServerWait wait;
    int warnings;

    InProgress(ServerWait wait) {
      this.wait = wait;
    }
  }

  private final String slot;
  private final Duration warnAfter;
  private final Clock clock;
  private final Map<Object, InProgress> current = new ConcurrentHashMap<>();

  public ServerCalls(String slot, Duration warnAfter, Clock clock) {
    this.slot = slot;
    this.warnAfter = warnAfter;
    this.clock = clock;
  }

  /** Runs {@code call}, known as waiting for {@code what} until it returns or throws. */
  public <T> T call(String what, Call<T> call) throws SQLException {
    Object token = new Object();
    InProgress entry = new InProgress(new ServerWait(what, clock.instant()));
    current.put(token, entry);
    try {
      return call.run();
    } finally {
      current.remove(token);
      synchronized (entry) {
        if (entry.warnings > 0) {
          log.info("slot {}: the wait for {} ended after {} s", slot, what,
              Duration.between(entry.wait.since(), clock.instant()).toSeconds());
        }
      }
    }
  }

  /** As {@link #call}, for a call that throws no checked exception. */
  public <T> T run(String what, Supplier<T> call) {
    try {
      return call(what, call::get);
    } catch (SQLException e) {
      throw new IllegalStateException("unreachable: the call throws no SQLException", e);
    }
  }

  /** The call that has waited longest, if one is in progress. */
  public Optional<ServerWait> longest() {
    return current.values().stream().map(e -> e.wait).min(Comparator.comparing(ServerWait::since));
  }

  /** The call that has waited longest, if it has waited {@code warnAfter} or longer. */
  public Optional<ServerWait> stalled() {
    Instant now = clock.instant();
    return longest().filter(w -> w.age(now).compareTo(warnAfter) >= 0);
  }

  /**
   * Warns of each call that has waited {@code warnAfter} since it began or since its last
   * warning, and returns the calls it warned of; called every second or so from a thread that
   * never waits for the server.
   */
  public List<ServerWait> report() {
    Instant now = clock.instant();
    List<ServerWait> warned = new ArrayList<>();
    for (InProgress entry : current.values()) {
      synchronized (entry) {
        Duration age = entry.wait.age(now);
        if (age.compareTo(warnAfter.multipliedBy(entry.warnings + 1L)) >= 0) {
          entry.warnings++;
          warned.add(entry.wait);
          log.warn("slot {}: waiting {} s, since {}, for {}", slot, age.toSeconds(), entry.wait.since(),
              entry.wait.what());
        }
      }
    }
    return warned;
  }
}
