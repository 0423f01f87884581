package io.txbox.spi.support;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Masks secrets in text that txbox prints: a URI's whole user info, everything between
 * {@code scheme://} and the last {@code @} before the host ({@code amqp://***@host}, whatever the
 * password holds), also where a driver quotes only the host part ({@code UnknownHostException: app:secret@db}), and the value of any parameter or
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
  /** Where a URL starts: its scheme, then {@code ://} ({@code jdbc:postgresql://} starts at {@code postgresql}). */
  private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*://");
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
    url = maskUserInfo(url);
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
    String masked = maskUserInfo(text);
    masked = USER_INFO.matcher(masked).replaceAll(m -> m.group(2).isEmpty()
        ? m.group(0) : java.util.regex.Matcher.quoteReplacement(m.group(1) + ":" + MASK + "@"));
    masked = QUOTED.matcher(masked).replaceAll(m -> java.util.regex.Matcher.quoteReplacement(
        m.group(1) + m.group().charAt(m.group().length() - 1) + MASK + m.group().charAt(m.group().length() - 1)));
    return PLAIN.matcher(masked).replaceAll("$1" + MASK);
  }

  /**
   * Where a broker or database is, for a start line: each URL in {@code address} as its scheme,
   * host and port alone ({@code amqp://u:p@rabbit:5672/vhost} is {@code amqp://rabbit:5672}); text
   * that holds no URL ({@code kafka-1:9092}, a region) is {@linkplain #mask masked}. Null stays null.
   */
  public static String address(String address) {
    if (address == null) {
      return null;
    }
    Matcher scheme = SCHEME.matcher(address);
    if (!scheme.find()) {
      return mask(address);
    }
    StringBuilder out = new StringBuilder();
    int start = scheme.start();
    while (start >= 0) {
      int authority = scheme.end();
      int end = scheme.find() ? scheme.start() : -1;
      String url = address.substring(authority, end < 0 ? address.length() : end);
      String hostAndRest = url.substring(userInfoEnd(url, 0, url.length()) + 1);
      int hostEnd = firstOf(hostAndRest, "/?#,; \t\r\n");
      out.append(out.length() == 0 ? "" : ",").append(address, start, authority)
          .append(hostAndRest, 0, hostEnd);
      start = end;
    }
    return out.toString();
  }

  /**
   * Every URL's user info masked whole: a password may hold {@code ' " / + @ ,} or a space, so a
   * URL's user info runs from {@code scheme://} to the last {@code @} before the next URL or the
   * end of the line. Text after a URL that holds an {@code @} of its own is masked with it: too
   * much masked reads worse, too little leaks.
   */
  private static String maskUserInfo(String text) {
    Matcher scheme = SCHEME.matcher(text);
    if (!scheme.find()) {
      return text;
    }
    StringBuilder out = new StringBuilder(text.length());
    int copied = 0;
    do {
      int authority = scheme.end();
      int next = scheme.find() ? scheme.start() : text.length();
      int lineEnd = firstOf(text.substring(authority, next), "\r\n");
      int at = userInfoEnd(text, authority, authority + lineEnd);
      if (at >= 0) {
        out.append(text, copied, authority).append(MASK);
        copied = at;
      }
      if (next == text.length()) {
        break;
      }
      scheme.region(next, text.length());
    } while (scheme.find());
    return out.append(text, copied, text.length()).toString();
  }

  /**
   * Where the user info of the URL whose authority starts at {@code from} ends: its last {@code @}
   * before {@code to}, or -1 when it has none. An {@code @} in the query ({@code
   * ?password=p@ss}) is not it: past a {@code ?} that a {@code name=} follows, only an {@code @}
   * before the {@code ?} counts.
   */
  private static int userInfoEnd(String text, int from, int to) {
    int at = text.lastIndexOf('@', to - 1);
    if (at < from) {
      return -1;
    }
    int query = text.indexOf('?', from);
    if (query >= 0 && query < at && text.substring(query, at).indexOf('=') >= 0) {
      at = text.lastIndexOf('@', query - 1);
    }
    return at >= from ? at : -1;
  }

  /** The index of the first of {@code chars} in {@code text}, or its length when there is none. */
  private static int firstOf(String text, String chars) {
    for (int i = 0; i < text.length(); i++) {
      if (chars.indexOf(text.charAt(i)) >= 0) {
        return i;
      }
    }
    return text.length();
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
