package io.txbox.server.console;

import io.txbox.server.TerminalText;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import javax.crypto.Mac;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Who may sign in to the console, from a properties file: one line per user, the role and a
 * password hash that {@code txbox console hash-password} prints. No password is ever stored.
 *
 * <pre>
 * alice = operator pbkdf2-sha256:210000:3q2+7w==:j3Yw...
 * bob   = viewer   pbkdf2-sha256:210000:c2FsdA==:9fQe...
 * </pre>
 */
public final class ConsoleUsers {
  /** PBKDF2 iterations of a new hash: OWASP's 2023 figure for PBKDF2-HMAC-SHA256. */
  public static final int ITERATIONS = 210_000;
  private static final String SCHEME = "pbkdf2-sha256";
  private static final SecureRandom RANDOM = new SecureRandom();

  /** What a user may do: look, or also act (retry, discard, replay). */
  public enum Role { VIEWER, OPERATOR }

  /** Fewest and most PBKDF2 iterations a users file may ask for: a huge count would make each sign-in a denial of service. */
  static final int MIN_ITERATIONS = 100_000;
  static final int MAX_ITERATIONS = 10_000_000;

  private record User(Role role, int iterations, byte[] salt, byte[] hash) {}

  private final Map<String, User> users;

  private ConsoleUsers(Map<String, User> users) {
    this.users = users;
  }

  /**
   * Reads the users file; every line is checked, and a bad one names its user and what is wrong.
   *
   * @throws IllegalArgumentException naming {@code --users} and the line at fault
   */
  public static ConsoleUsers load(Path file) {
    Properties lines = new Properties();
    try (InputStream in = Files.newInputStream(file)) {
      lines.load(in);
    } catch (IOException | IllegalArgumentException e) {
      throw new IllegalArgumentException("invalid --users: cannot read " + file + ": " + e.getMessage());
    }
    Map<String, User> users = new LinkedHashMap<>();
    for (String name : lines.stringPropertyNames()) {
      users.put(name, parse(file, name, lines.getProperty(name).trim()));
    }
    if (users.isEmpty()) {
      throw new IllegalArgumentException("invalid --users: " + file + " names no user; add lines such as"
          + " 'alice = operator <hash from txbox console hash-password>'");
    }
    return new ConsoleUsers(users);
  }

  private static User parse(Path file, String name, String value) {
    String[] parts = value.split("\\s+");
    String problem = null;
    Role role = null;
    if (parts.length != 2) {
      problem = "expected '<viewer|operator> <hash>'";
    } else if (!parts[0].equals("viewer") && !parts[0].equals("operator")) {
      problem = "the role must be viewer or operator, was '" + parts[0] + "'";
    } else {
      role = Role.valueOf(parts[0].toUpperCase(java.util.Locale.ROOT));
    }
    if (problem == null) {
      try {
        return hashed(role, parts[1]);
      } catch (IllegalArgumentException e) {
        problem = "the hash must come from txbox console hash-password (" + SCHEME + ":<iterations>:<salt>:<hash>): "
            + e.getMessage();
      }
    }
    throw new IllegalArgumentException("invalid --users: user '" + TerminalText.of(name, 100) + "' in " + file
        + ": " + problem);
  }

  /** The user of a well-formed hash; anything else is refused here, at start, rather than at sign-in. */
  private static User hashed(Role role, String hash) {
    String[] fields = hash.split(":", -1);
    if (fields.length != 4 || !fields[0].equals(SCHEME)) {
      throw new IllegalArgumentException("it has " + fields.length + " fields, or another scheme");
    }
    int iterations;
    try {
      iterations = Integer.parseInt(fields[1]);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("the iterations are not a number");
    }
    if (iterations < MIN_ITERATIONS || iterations > MAX_ITERATIONS) {
      throw new IllegalArgumentException("the iterations must be between " + MIN_ITERATIONS + " and "
          + MAX_ITERATIONS + ", were " + iterations);
    }
    byte[] salt = Base64.getDecoder().decode(fields[2]); // IllegalArgumentException names the bad character
    byte[] expected = Base64.getDecoder().decode(fields[3]);
    if (salt.length < 8 || expected.length != 32) {
      throw new IllegalArgumentException("the salt must have 8 bytes or more and the hash 32, had "
          + salt.length + " and " + expected.length);
    }
    return new User(role, iterations, salt, expected);
  }

  /** The user's role if {@code password} is theirs; empty for an unknown user or a wrong password. */
  public Optional<Role> authenticate(String name, char[] password) {
    User user = users.get(name);
    if (user == null) {
      hash(password, new byte[16], ITERATIONS); // as slow as a known user, so timing tells nothing
      return Optional.empty();
    }
    byte[] actual = hash(password, user.salt(), user.iterations());
    return MessageDigest.isEqual(user.hash(), actual) ? Optional.of(user.role()) : Optional.empty();
  }

  /**
   * HMAC-SHA256 of {@code message} under a key only the users file gives: one derived from the
   * user's password hash, so that it outlives a restart and a new password changes it. Empty for
   * an unknown user.
   */
  Optional<byte[]> sign(String name, String message) {
    User user = users.get(name);
    if (user == null) {
      return Optional.empty();
    }
    try {
      byte[] key = MessageDigest.getInstance("SHA-256")
          .digest(concat("txbox console signing key 1\n".getBytes(StandardCharsets.UTF_8), user.hash()));
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return Optional.of(mac.doFinal(message.getBytes(StandardCharsets.UTF_8)));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("SHA-256 and HmacSHA256 are part of every JDK", e);
    }
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] both = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, both, a.length, b.length);
    return both;
  }

  /** A new hash of {@code password} with a random salt, for the users file. */
  public static String hash(char[] password) {
    byte[] salt = new byte[16];
    RANDOM.nextBytes(salt);
    return SCHEME + ":" + ITERATIONS + ":" + Base64.getEncoder().encodeToString(salt) + ":"
        + Base64.getEncoder().encodeToString(hash(password, salt, ITERATIONS));
  }

  private static byte[] hash(char[] password, byte[] salt, int iterations) {
    try {
      PBEKeySpec spec = new PBEKeySpec(password, salt, iterations, 256);
      return SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256").generateSecret(spec).getEncoded();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("PBKDF2WithHmacSHA256 is part of every JDK", e);
    }
  }
}
