package io.txbox.server.http;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;

/**
 * One request as {@link HttpServer} read it, whole.
 *
 * <pre>{@code
 * String cookie = request.header("cookie");
 * }</pre>
 *
 * @param method the method, upper case, such as {@code GET}
 * @param path the path, percent-decoded
 * @param rawQuery the query as sent, without {@code ?}; null when there is none
 * @param headers each header's values in the order sent, under its name in lower case
 * @param body the body; empty when none was sent
 * @param remote the address the connection came from (a proxy's, behind one)
 */
public record HttpRequest(String method, String path, String rawQuery, Map<String, List<String>> headers,
    byte[] body, InetSocketAddress remote) {
  /** Copies the headers. */
  public HttpRequest {
    headers = Map.copyOf(headers);
  }

  /** The first value of the header {@code name} (any case), or null. */
  public String header(String name) {
    List<String> values = headers.get(name.toLowerCase(java.util.Locale.ROOT));
    return values == null || values.isEmpty() ? null : values.get(0);
  }

  /** Every value of the header {@code name} (any case); empty when it was not sent. */
  public List<String> headerValues(String name) {
    return headers.getOrDefault(name.toLowerCase(java.util.Locale.ROOT), List.of());
  }
}
