package io.txbox.server.http;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An answer: status, headers, the cookies it sets and body. {@link HttpServer} adds
 * {@code Content-Length} and {@code Connection: close}.
 *
 * <pre>{@code
 * return HttpResponse.of(200, "application/json", json).with("Cache-Control", "no-store");
 * }</pre>
 */
public record HttpResponse(int status, Map<String, String> headers, List<String> cookies, byte[] body) {
  /** Copies the headers, keeping their order, and the cookies, each a {@code Set-Cookie} line of its own. */
  public HttpResponse {
    if (status < 100 || status > 599) {
      throw new IllegalArgumentException("status must be >= 100 and <= 599, was " + status);
    }
    headers = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(headers));
    cookies = List.copyOf(cookies);
  }

  /** A body of {@code contentType}, UTF-8 encoded. */
  public static HttpResponse of(int status, String contentType, String body) {
    return new HttpResponse(status, Map.of("Content-Type", contentType), List.of(), body.getBytes(StandardCharsets.UTF_8));
  }

  /** Plain text. */
  public static HttpResponse text(int status, String body) {
    return of(status, "text/plain; charset=utf-8", body);
  }

  /** This answer with one more header, or another value for it. */
  public HttpResponse with(String name, String value) {
    requireOneLine(name, value);
    Map<String, String> more = new LinkedHashMap<>(headers);
    more.put(name, value);
    return new HttpResponse(status, more, cookies, body);
  }

  /** This answer setting one more cookie ({@code name=value; attributes}), after those it sets already. */
  public HttpResponse withCookie(String cookie) {
    requireOneLine("Set-Cookie", cookie);
    List<String> more = new ArrayList<>(cookies);
    more.add(cookie);
    return new HttpResponse(status, headers, more, body);
  }

  private static void requireOneLine(String name, String value) {
    if (name.indexOf('\r') >= 0 || name.indexOf('\n') >= 0 || value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0) {
      throw new IllegalArgumentException("header " + name + " must not hold a line break");
    }
  }

  /** The bytes on the wire; without the body for a {@code HEAD} request. */
  ByteBuffer encode(boolean headOnly) {
    StringBuilder head = new StringBuilder(256);
    head.append("HTTP/1.1 ").append(status).append(' ').append(reason(status)).append("\r\n");
    headers.forEach((name, value) -> head.append(name).append(": ").append(value).append("\r\n"));
    cookies.forEach(cookie -> head.append("Set-Cookie: ").append(cookie).append("\r\n"));
    head.append("Content-Length: ").append(body.length).append("\r\n");
    head.append("Connection: close\r\n\r\n");
    byte[] h = head.toString().getBytes(StandardCharsets.ISO_8859_1);
    ByteBuffer out = ByteBuffer.allocate(h.length + (headOnly ? 0 : body.length));
    out.put(h);
    if (!headOnly) {
      out.put(body);
    }
    return out.flip();
  }

  private static String reason(int status) {
    return switch (status) {
      case 200 -> "OK";
      case 303 -> "See Other";
      case 400 -> "Bad Request";
      case 401 -> "Unauthorized";
      case 403 -> "Forbidden";
      case 404 -> "Not Found";
      case 405 -> "Method Not Allowed";
      case 408 -> "Request Timeout";
      case 411 -> "Length Required";
      case 413 -> "Content Too Large";
      case 421 -> "Misdirected Request";
      case 429 -> "Too Many Requests";
      case 431 -> "Request Header Fields Too Large";
      case 500 -> "Internal Server Error";
      case 501 -> "Not Implemented";
      case 503 -> "Service Unavailable";
      default -> "Status";
    };
  }
}
