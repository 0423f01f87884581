package io.txbox.server.console;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Slows password guessing at the console's sign-in without letting anyone lock a user out.
 *
 * <p>Wrong passwords are counted three ways, and past a count's free allowance each further
 * attempt it covers waits twice as long as the last (1 s, 2 s, 4 s ... up to {@link #MAX_WAIT}):
 * <ul>
 *   <li>per client address, whatever the user name ({@value #FREE_FAILURES} free): one client
 *       guessing many names;
 *   <li>per user name and client address ({@value #FREE_FAILURES} free): one client guessing one
 *       user's password;
 *   <li>per user name from the addresses that never signed in as that user
 *       ({@value #FREE_USER_FAILURES} free): many clients guessing one user's password together.
 *       An address the user signed in from before, and a browser that shows a
 *       {@linkplain DeviceCookies device cookie} of the user (it outlives a restart), are left out
 *       of this count and its wait, so that guesses from elsewhere can never keep the user out of
 *       a place or a browser they work from; from a new place in a new browser, they wait only
 *       once the name drew that many wrong passwords from new places.
 * </ul>
 * A wait never holds back another client's attempts, nor the user's from an address they signed
 * in from. The address is the client's: behind a reverse proxy, one the console is told to trust
 * ({@code --trusted-proxy}) names it in {@code X-Forwarded-For}. A success clears the counts of its
 * address and of its user. Failures and known addresses are kept for at most {@value #MAX_TRACKED}
 * keys each, the least recently seen forgotten first, so that guessing many names cannot fill the
 * memory.
 *
 * <pre>{@code
 * Optional<Duration> wait = throttle.waitFor(address, user, provenDevice, now);
 * if (wait.isPresent()) return tooMany(wait.get());
 * if (ok) throttle.succeeded(address, user); else throttle.failed(address, user, provenDevice, now);
 * }</pre>
 */
final class SignInThrottle {
  /** Wrong passwords allowed at full speed per address, and per user and address. */
  static final int FREE_FAILURES = 5;
  /** Wrong passwords allowed at full speed for one user from addresses it never signed in from. */
  static final int FREE_USER_FAILURES = 20;
  /** Longest wait between attempts. */
  static final Duration MAX_WAIT = Duration.ofMinutes(5);
  /** Most keys whose failures are remembered, and most addresses remembered as a user's own. */
  static final int MAX_TRACKED = 10_000;

  private record Failures(int count, Instant waitUntil) {}

  private final Map<String, Failures> failures = bounded();
  /** User and address pairs that signed in: the addresses a user works from. */
  private final Map<String, Boolean> known = bounded();

  /**
   * How long the next attempt for this user from this address must still wait, if at all;
   * {@code provenDevice}: the browser showed a device cookie of this user.
   */
  synchronized Optional<Duration> waitFor(String address, String user, boolean provenDevice, Instant now) {
    Instant until = later(failures.get(addressKey(address)), failures.get(pairKey(address, user)));
    if (!provenDevice && !known.containsKey(pairKey(address, user))) {
      until = later(until, failures.get(userKey(user)));
    }
    return until != null && until.isAfter(now) ? Optional.of(Duration.between(now, until)) : Optional.empty();
  }

  synchronized void failed(String address, String user, boolean provenDevice, Instant now) {
    count(addressKey(address), FREE_FAILURES, now);
    count(pairKey(address, user), FREE_FAILURES, now);
    if (!provenDevice && !known.containsKey(pairKey(address, user))) {
      count(userKey(user), FREE_USER_FAILURES, now);
    }
  }

  synchronized void succeeded(String address, String user) {
    failures.remove(addressKey(address));
    failures.remove(pairKey(address, user));
    failures.remove(userKey(user));
    known.put(pairKey(address, user), Boolean.TRUE);
  }

  private void count(String key, int free, Instant now) {
    failures.merge(key, next(1, free, now), (old, one) -> next(old.count() + 1, free, now));
  }

  private static String addressKey(String address) {
    return "address " + address;
  }

  private static String pairKey(String address, String user) {
    return "pair " + address + " " + userKey(user);
  }

  /** A typed name cut short: a key of the map stays small whatever was typed. */
  private static String userKey(String user) {
    return "user " + (user.length() > 100 ? user.substring(0, 100) : user);
  }

  private static Failures next(int count, int free, Instant now) {
    if (count < free) {
      return new Failures(count, null);
    }
    int doublings = Math.min(count - free, 20); // 2^20 s is far past MAX_WAIT already
    Duration wait = Duration.ofSeconds(1L << doublings);
    return new Failures(count, now.plus(wait.compareTo(MAX_WAIT) > 0 ? MAX_WAIT : wait));
  }

  private static Instant later(Failures failures, Failures other) {
    return later(failures == null ? null : failures.waitUntil(), other);
  }

  private static Instant later(Instant x, Failures other) {
    Instant y = other == null ? null : other.waitUntil();
    if (x == null) {
      return y;
    }
    return y == null || x.isAfter(y) ? x : y;
  }

  private static <V> Map<String, V> bounded() {
    return new LinkedHashMap<>(64, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, V> eldest) {
        return size() > MAX_TRACKED;
      }
    };
  }
}
