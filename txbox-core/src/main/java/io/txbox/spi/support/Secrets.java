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
 * log.info("database {}", Secrets.maskUrl(jdbcUrl)); // jdbc:postgresql://db/app?user=app&password=***
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
      "(?i)([\\w.-]*(?:password|passwd|pwd|secret|token|credentials?)[\\w.-]*\\s*=\\s*)(?:\"[^\"]*\"|'[^']*')");
  private static final Pattern PLAIN = Pattern.compile(
      "(?i)([\\w.-]*(?:password|passwd|pwd|secret|token|credentials?)[\\w.-]*(?:\\s*=\\s*|:))(?!\\*\\*\\*)[^&;,\\s\"']+");

  /**
   * In SQL, a literal after a secret's name, however they are joined: {@code PASSWORD 'x'},
   * {@code IDENTIFIED BY 'x'}, {@code PASSWORD('x')}, {@code password = 'it''s'}; a literal cut
   * off by the server's query-text limit is masked to the end.
   */
  private static final Pattern SQL_LITERAL_SECRET = Pattern.compile(
      "(?i)([\\w.-]*(?:password|passwd|pwd|secret|token|credentials?|identified\\s+by)[\\w.-]*(?:\\s*[=:(]\\s*|\\s+))"
          + "(?:'(?:[^'\\\\]|''|\\\\.)*(?:'|$)|\"(?:[^\"\\\\]|\"\"|\\\\.)*(?:\"|$))");
  /** In SQL (a comment, a JSON literal), {@code token: x}: a colon and spaces before the value. */
  private static final Pattern SQL_COLON_SECRET = Pattern.compile(
      "(?i)([\\w.-]*(?:password|passwd|pwd|secret|token|credentials?)[\\w.-]*\"?\\s*:\\s*\"?)(?!\\*\\*\\*)[^\\s,;'\"}*]+");

  private static final Pattern SECRET_NAME =
      Pattern.compile("(?i)[\\w.-]*(?:password|passwd|pwd|secret|token|credentials?)[\\w.-]*");

  private Secrets() {}

  /**
   * A JDBC or broker URL with every secret parameter's whole value masked. In free text a value
   * ends where a word does, but in a URL the drivers read it up to the next {@code &}: a password
   * holding {@code ,} {@code ;} {@code '} or a space must be masked to there, or part of it shows
   * ({@code password=***,ret99}). Null stays null.
   */
  public static String maskUrl(String url) {
    if (url == null) {
      return null;
    }
    int query = url.indexOf('?');
    String head = mask(query < 0 ? url : url.substring(0, query));
    if (query < 0) {
      return head;
    }
    StringBuilder out = new StringBuilder(head).append('?');
    String[] parameters = url.substring(query + 1).split("&", -1);
    for (int i = 0; i < parameters.length; i++) {
      String p = parameters[i];
      int eq = p.indexOf('=');
      String name = eq < 0 ? p : p.substring(0, eq);
      out.append(i == 0 ? "" : "&").append(eq >= 0 && SECRET_NAME.matcher(name).matches() ? name + "=" + MASK : mask(p));
    }
    return out.toString();
  }

  /** {@code text} with every secret it recognises replaced by {@code ***}; null stays null. */
  public static String mask(String text) {
    if (text == null) {
      return null;
    }
    String masked = USER_INFO.matcher(text).replaceAll(m -> m.group(2).isEmpty()
        ? m.group(0) : java.util.regex.Matcher.quoteReplacement(m.group(1) + ":" + MASK + "@"));
    masked = TOKEN_ONLY.matcher(masked).replaceAll("$1" + MASK + "@");
    masked = QUOTED.matcher(masked).replaceAll(m -> java.util.regex.Matcher.quoteReplacement(
        m.group(1) + m.group().charAt(m.group().length() - 1) + MASK + m.group().charAt(m.group().length() - 1)));
    return PLAIN.matcher(masked).replaceAll("$1" + MASK);
  }

  /**
   * SQL that txbox shows (the query of a transaction that holds delivery back), with what
   * {@link #mask} finds and, beyond it, the literals SQL gives secrets: {@code ALTER ROLE app
   * PASSWORD '***'}, {@code IDENTIFIED BY '***'}, a comment's {@code token: ***}. Null stays null.
   */
  public static String maskSql(String sql) {
    if (sql == null) {
      return null;
    }
    String masked = SQL_LITERAL_SECRET.matcher(sql).replaceAll(m -> {
      String literal = m.group().substring(m.group(1).length());
      char quote = literal.charAt(0);
      boolean closed = literal.length() > 1 && literal.charAt(literal.length() - 1) == quote;
      return java.util.regex.Matcher.quoteReplacement(m.group(1) + quote + MASK + (closed ? quote : ""));
    });
    masked = SQL_COLON_SECRET.matcher(masked).replaceAll("$1" + MASK);
    return mask(masked);
  }
}
