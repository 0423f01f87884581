package io.txbox.server.console;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Optional;

/**
 * What a browser proves by having signed in before, so that guesses from elsewhere cannot lock its
 * user out (OWASP's "device cookies"). After a sign-in, the browser keeps a cookie naming the user
 * and when, signed with a key derived from the user's password hash ({@link ConsoleUsers#sign}): it
 * outlives a restart of the console, a new password ends it, and nobody without the users file can
 * make one. A sign-in that shows one for its user skips the per-user wait of {@link SignInThrottle},
 * as one from an address the user signed in from does; the per-address waits still hold.
 *
 * <pre>{@code
 * boolean proven = devices.proves(r.cookie(DeviceCookies.NAME), user, now);
 * ...
 * response.withCookie(devices.issue(user, now));
 * }</pre>
 */
final class DeviceCookies {
  static final String NAME = "txbox_device";
  /** How long a browser's proof lasts after its last sign-in. */
  static final Duration MAX_AGE = Duration.ofDays(30);
  /** Longest cookie value read: anything longer is no proof, whatever it holds. */
  private static final int MAX_LENGTH = 400;
  private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();

  private final ConsoleUsers users;

  DeviceCookies(ConsoleUsers users) {
    this.users = users;
  }

  /** The {@code Set-Cookie} value for a browser that just signed in as {@code user}; sent to the sign-in form only. */
  String issue(String user, Instant now) {
    long issued = now.getEpochSecond();
    byte[] signature = users.sign(user, message(user, issued)).orElseThrow();
    String value = ENCODER.encodeToString(user.getBytes(StandardCharsets.UTF_8)) + "." + issued + "."
        + ENCODER.encodeToString(signature);
    return NAME + "=" + value + "; Path=/login; Max-Age=" + MAX_AGE.toSeconds() + "; HttpOnly; SameSite=Strict";
  }

  /** Whether {@code value}, a cookie the browser sent, is a proof for {@code user} that has not run out. */
  boolean proves(String value, String user, Instant now) {
    if (value == null || user == null || value.length() > MAX_LENGTH) {
      return false;
    }
    String[] parts = value.split("\\.", -1);
    try {
      if (parts.length != 3 || !user.equals(new String(Base64.getUrlDecoder().decode(parts[0]), StandardCharsets.UTF_8))) {
        return false;
      }
      long issued = Long.parseLong(parts[1]);
      Instant at = Instant.ofEpochSecond(issued);
      if (at.isAfter(now.plusSeconds(60)) || at.plus(MAX_AGE).isBefore(now)) {
        return false;
      }
      byte[] shown = Base64.getUrlDecoder().decode(parts[2]);
      return users.sign(user, message(user, issued)).map(expected -> MessageDigest.isEqual(expected, shown)).orElse(false);
    } catch (IllegalArgumentException | java.time.DateTimeException e) { // NumberFormatException included
      return false;
    }
  }

  private static String message(String user, long issued) {
    return "device\n" + user + "\n" + issued;
  }
}
