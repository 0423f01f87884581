package io.txbox.server.console;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Slows password guessing at the console's sign-in: after {@value #FREE_FAILURES} wrong passwords
 * for one user name, or from one client address, each further attempt for it waits twice as long
 * as the last (1 s, 2 s, 4 s ... up to {@link #MAX_WAIT}); while it waits, even the right password
 * is refused unchecked. A success clears both. Failures are kept for at most {@value #MAX_TRACKED}
 * names and addresses, the least recently seen forgotten first, so that guessing many names cannot
 * fill the memory.
 *
 * <pre>{@code
 * Optional<Duration> wait = throttle.waitFor(address, user, now);
 * if (wait.isPresent()) return tooMany(wait.get());
 * if (ok) throttle.succeeded(address, user); else throttle.failed(address, user, now);
 * }</pre>
 */
final class SignInThrottle {
  /** Wrong passwords allowed at full speed. */
  static final int FREE_FAILURES = 5;
  /** Longest wait between attempts. */
  static final Duration MAX_WAIT = Duration.ofMinutes(5);
  /** Most user names and addresses whose failures are remembered. */
  static final int MAX_TRACKED = 10_000;

  private record Failures(int count, Instant waitUntil) {}

  private final Map<String, Failures> failures = new LinkedHashMap<>(64, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Failures> eldest) {
      return size() > MAX_TRACKED;
    }
  };

  /** How long the next attempt for this user or from this address must still wait, if at all. */
  synchronized Optional<Duration> waitFor(String address, String user, Instant now) {
    Instant until = later(failures.get("address " + address), failures.get(userKey(user)));
    return until != null && until.isAfter(now) ? Optional.of(Duration.between(now, until)) : Optional.empty();
  }

  synchronized void failed(String address, String user, Instant now) {
    failures.merge("address " + address, next(1, now), (old, one) -> next(old.count() + 1, now));
    failures.merge(userKey(user), next(1, now), (old, one) -> next(old.count() + 1, now));
  }

  synchronized void succeeded(String address, String user) {
    failures.remove("address " + address);
    failures.remove(userKey(user));
  }

  /** A typed name cut short: a key of the map stays small whatever was typed. */
  private static String userKey(String user) {
    return "user " + (user.length() > 100 ? user.substring(0, 100) : user);
  }

  private static Failures next(int count, Instant now) {
    if (count < FREE_FAILURES) {
      return new Failures(count, null);
    }
    int doublings = Math.min(count - FREE_FAILURES, 20); // 2^20 s is far past MAX_WAIT already
    Duration wait = Duration.ofSeconds(1L << doublings);
    return new Failures(count, now.plus(wait.compareTo(MAX_WAIT) > 0 ? MAX_WAIT : wait));
  }

  private static Instant later(Failures a, Failures b) {
    Instant x = a == null ? null : a.waitUntil();
    Instant y = b == null ? null : b.waitUntil();
    if (x == null) {
      return y;
    }
    return y == null || x.isAfter(y) ? x : y;
  }
}
