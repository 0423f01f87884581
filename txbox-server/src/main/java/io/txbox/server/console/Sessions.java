package io.txbox.server.console;

import io.txbox.server.console.ConsoleUsers.Role;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Signed-in users, in memory: a restart signs everyone out. Each session has its own CSRF token,
 * which every form carries and every action must return.
 */
final class Sessions {
  /**
   * Most sessions kept per user; past it, that user's session that expires first goes. Per user,
   * so that one user signing in again and again pushes out only their own sessions; the users
   * file bounds the whole.
   */
  static final int MAX_SESSIONS_PER_USER = 100;
  private static final SecureRandom RANDOM = new SecureRandom();

  /** A signed-in user. */
  record Session(String id, String user, Role role, String csrfToken, long expiresAtNanos) {}

  private final Map<String, Session> byId = new ConcurrentHashMap<>();
  private final Duration timeout;

  Sessions(Duration timeout) {
    this.timeout = timeout;
  }

  synchronized Session open(String user, Role role) {
    long now = System.nanoTime();
    byId.values().removeIf(s -> s.expiresAtNanos() - now < 0);
    if (byId.values().stream().filter(s -> s.user().equals(user)).count() >= MAX_SESSIONS_PER_USER) {
      byId.values().stream().filter(s -> s.user().equals(user)).min(Comparator.comparingLong(Session::expiresAtNanos))
          .ifPresent(s -> byId.remove(s.id()));
    }
    Session session = new Session(token(), user, role, token(), now + timeout.toNanos());
    byId.put(session.id(), session);
    return session;
  }

  Optional<Session> find(String id) {
    Session session = id == null ? null : byId.get(id);
    if (session == null || session.expiresAtNanos() - System.nanoTime() < 0) {
      return Optional.empty();
    }
    return Optional.of(session);
  }

  void close(String id) {
    byId.remove(id);
  }

  private static String token() {
    byte[] bytes = new byte[32];
    RANDOM.nextBytes(bytes);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
  }
}
