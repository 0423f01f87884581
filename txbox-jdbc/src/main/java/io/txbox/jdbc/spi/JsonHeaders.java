package io.txbox.jdbc.spi;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads and writes a store's {@code headers} column, a JSON object of strings. Reading: string
 * values are unescaped; any other value (a number, {@code true}, a nested object written by a
 * plain-SQL writer) is kept as its JSON text. On PostgreSQL, casting to text and parsing here is
 * about three times cheaper for the database than expanding the object with
 * {@code jsonb_each_text} in the batch read; and the stores depend on no JSON library.
 *
 * <pre>{@code
 * String json = JsonHeaders.write(Map.of("traceparent", "00-..."));
 * Map<String, String> headers = JsonHeaders.parse(json);
 * }</pre>
 */
public final class JsonHeaders {
  private final String json;
  private int at;

  private JsonHeaders(String json) {
    this.json = json;
  }

  /** The headers of a JSON object; an empty map for {@code null} or {@code {}}. */
  public static Map<String, String> parse(String json) {
    if (json == null || json.equals("{}")) {
      return Map.of();
    }
    return new JsonHeaders(json).object();
  }

  /** {@code headers} as a JSON object, every value a string; {@code {}} when there are none. */
  public static String write(Map<String, String> headers) {
    if (headers.isEmpty()) {
      return "{}";
    }
    StringBuilder out = new StringBuilder("{");
    headers.forEach((name, value) -> {
      if (out.length() > 1) {
        out.append(',');
      }
      quote(out, name).append(':');
      quote(out, value);
    });
    return out.append('}').toString();
  }

  private static StringBuilder quote(StringBuilder out, String text) {
    out.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"');
  }

  private Map<String, String> object() {
    Map<String, String> headers = new LinkedHashMap<>();
    expect('{');
    skipSpace();
    if (peek() == '}') {
      return headers;
    }
    while (true) {
      skipSpace();
      String name = string();
      skipSpace();
      expect(':');
      skipSpace();
      headers.put(name, peek() == '"' ? string() : rawValue());
      skipSpace();
      char next = json.charAt(at++);
      if (next == '}') {
        return headers;
      }
      if (next != ',') {
        throw error("expected , or }");
      }
    }
  }

  private String string() {
    expect('"');
    int end = json.indexOf('"', at);
    int escape = json.indexOf('\\', at);
    if (end >= 0 && (escape < 0 || escape > end)) { // the common case: nothing to unescape
      String plain = json.substring(at, end);
      at = end + 1;
      return plain;
    }
    StringBuilder out = new StringBuilder();
    while (true) {
      char c = json.charAt(at++);
      if (c == '"') {
        return out.toString();
      }
      if (c != '\\') {
        out.append(c);
        continue;
      }
      char escaped = json.charAt(at++);
      switch (escaped) {
        case 'b' -> out.append('\b');
        case 'f' -> out.append('\f');
        case 'n' -> out.append('\n');
        case 'r' -> out.append('\r');
        case 't' -> out.append('\t');
        case 'u' -> {
          out.append((char) Integer.parseInt(json.substring(at, at + 4), 16));
          at += 4;
        }
        default -> out.append(escaped); // \" \\ \/
      }
    }
  }

  /** A number, literal, array or object, kept as JSON text. */
  private String rawValue() {
    int start = at;
    int depth = 0;
    boolean inString = false;
    for (; at < json.length(); at++) {
      char c = json.charAt(at);
      if (inString) {
        if (c == '\\') {
          at++;
        } else if (c == '"') {
          inString = false;
        }
      } else if (c == '"') {
        inString = true;
      } else if (c == '{' || c == '[') {
        depth++;
      } else if (c == '}' || c == ']') {
        if (depth == 0) {
          break;
        }
        depth--;
      } else if (c == ',' && depth == 0) {
        break;
      }
    }
    return json.substring(start, at).trim();
  }

  private void skipSpace() {
    while (at < json.length() && Character.isWhitespace(json.charAt(at))) {
      at++;
    }
  }

  private char peek() {
    return json.charAt(at);
  }

  private void expect(char c) {
    if (json.charAt(at++) != c) {
      throw error("expected " + c);
    }
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException("headers are not a JSON object (" + what + " at " + (at - 1) + "): " + json);
  }
}
