package io.txbox.spi.support;

import java.util.regex.Pattern;

/**
 * Masks secrets in text that txbox prints: the password of a URI's user info
 * ({@code amqp://app:secret@host}, {@code nats://token@host}), also where a driver quotes only the
 * host part ({@code UnknownHostException: app:secret@db}), and the value of any parameter or
 * property whose name says it is a secret ({@code password=}, {@code sslpassword=},
 * {@code ssl.truststore.password=}, {@code token=}, JAAS {@code password="..."}).
 *
 * <pre>{@code
 * log.info("database {}", Secrets.mask(jdbcUrl)); // jdbc:postgresql://db/app?user=app&password=***
 * }</pre>
 */
public final class Secrets {
  private static final String MASK = "***";
  /**
   * {@code user:password@}, after {@code ://} or anywhere a word starts: a driver that cannot parse
   * a URL quotes its host part alone ({@code app:secret@db.invalid}).
   */
  private static final Pattern USER_INFO = Pattern.compile("((?:^|[\\s'\"(\\[=,;/])[^\\s/@:'\"]*)(:[^/@\\s'\"]*|)@");
  private static final Pattern TOKEN_ONLY = Pattern.compile("(://)([^/@:\\s]+)@");
  private static final Pattern QUOTED = Pattern.compile(
      "(?i)([\\w.-]*(?:password|passwd|pwd|secret|token|credentials?)[\\w.-]*\\s*=\\s*)\"[^\"]*\"");
  private static final Pattern PLAIN = Pattern.compile(
      "(?i)([\\w.-]*(?:password|passwd|pwd|secret|token|credentials?)[\\w.-]*(?:\\s*=\\s*|:))(?!\\*\\*\\*)[^&;,\\s\"']+");

  private Secrets() {}

  /** {@code text} with every secret it recognises replaced by {@code ***}; null stays null. */
  public static String mask(String text) {
    if (text == null) {
      return null;
    }
    String masked = USER_INFO.matcher(text).replaceAll(m -> m.group(2).isEmpty()
        ? m.group(0) : java.util.regex.Matcher.quoteReplacement(m.group(1) + ":" + MASK + "@"));
    masked = TOKEN_ONLY.matcher(masked).replaceAll("$1" + MASK + "@");
    masked = QUOTED.matcher(masked).replaceAll("$1\"" + MASK + "\"");
    return PLAIN.matcher(masked).replaceAll("$1" + MASK);
  }
}
