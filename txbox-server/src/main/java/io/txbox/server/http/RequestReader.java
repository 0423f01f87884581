package io.txbox.server.http;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Reads one HTTP/1.x request from the bytes as they arrive, within its limits: the request line
 * and headers, then a body of {@code Content-Length} bytes. What breaks the protocol or a limit
 * is refused with the status that says so, and the reader takes nothing more.
 */
final class RequestReader {
  /** Most headers in one request. */
  static final int MAX_HEADERS = 100;
  private static final Pattern METHOD = Pattern.compile("[A-Z]{1,16}");
  private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}");
  private static final int FIRST_BUFFER = 2048;

  /** What one look at the bytes so far found. */
  sealed interface Outcome permits NeedMore, Complete, Refused {}

  /** The request is not whole yet. */
  record NeedMore() implements Outcome {}

  record Complete(HttpRequest request) implements Outcome {}

  record Refused(HttpResponse response) implements Outcome {}

  private static final NeedMore NEED_MORE = new NeedMore();

  private final int maxHeadBytes;
  private final int maxBodyBytes;
  private ByteBuffer buffer = ByteBuffer.allocate(FIRST_BUFFER);
  private int headEnd = -1; // index after the blank line that ends the head
  private int scanned; // bytes already searched for the blank line
  private Head head;

  private record Head(String method, String target, Map<String, List<String>> headers, int bodyLength) {}

  RequestReader(int maxHeadBytes, int maxBodyBytes) {
    this.maxHeadBytes = maxHeadBytes;
    this.maxBodyBytes = maxBodyBytes;
  }

  /** Where the next bytes go: room is made, up to the limits, as the request grows. */
  ByteBuffer buffer() {
    if (!buffer.hasRemaining()) {
      int limit = headEnd < 0 ? maxHeadBytes : headEnd + head.bodyLength();
      int size = Math.min(Math.max(buffer.capacity() * 2, FIRST_BUFFER), Math.max(limit, buffer.capacity() + 1));
      buffer = ByteBuffer.allocate(size).put(buffer.flip());
    }
    return buffer;
  }

  /** Looks at what has arrived; {@code remote} is the client's address. */
  Outcome advance(InetSocketAddress remote) {
    if (headEnd < 0) {
      headEnd = findBlankLine();
      if (headEnd < 0) {
        return buffer.position() >= maxHeadBytes
            ? refuse(431, "request line and headers longer than " + maxHeadBytes + " bytes") : NEED_MORE;
      }
      Object parsed = parseHead();
      if (parsed instanceof Refused refused) {
        return refused;
      }
      head = (Head) parsed;
    }
    if (buffer.position() < headEnd + head.bodyLength()) {
      return NEED_MORE;
    }
    return build(remote);
  }

  /** The index after the first empty line (CRLF CRLF, or bare LFs), or -1. */
  private int findBlankLine() {
    byte[] bytes = buffer.array();
    int end = Math.min(buffer.position(), maxHeadBytes);
    for (int i = Math.max(1, scanned); i < end; i++) {
      if (bytes[i] == '\n' && (bytes[i - 1] == '\n' || (i >= 2 && bytes[i - 1] == '\r' && bytes[i - 2] == '\n'))) {
        return i + 1;
      }
    }
    scanned = end;
    return -1;
  }

  private Object parseHead() {
    String text = new String(buffer.array(), 0, headEnd, StandardCharsets.ISO_8859_1);
    String[] lines = text.split("\r?\n");
    String[] requestLine = lines[0].split(" ", -1);
    if (requestLine.length != 3 || !METHOD.matcher(requestLine[0]).matches()
        || !(requestLine[2].equals("HTTP/1.1") || requestLine[2].equals("HTTP/1.0"))) {
      return refuse(400, "not an HTTP/1.x request line");
    }
    Map<String, List<String>> headers = new LinkedHashMap<>();
    int count = 0;
    for (int i = 1; i < lines.length && !lines[i].isEmpty(); i++) {
      String line = lines[i];
      int colon = line.indexOf(':');
      if (colon <= 0 || !TOKEN.matcher(line.substring(0, colon)).matches()) {
        return refuse(400, "malformed header line");
      }
      if (++count > MAX_HEADERS) {
        return refuse(431, "more than " + MAX_HEADERS + " headers");
      }
      headers.computeIfAbsent(line.substring(0, colon).toLowerCase(Locale.ROOT), k -> new ArrayList<>())
          .add(line.substring(colon + 1).strip());
    }
    if (headers.containsKey("transfer-encoding")) {
      return refuse(411, "chunked bodies are not taken: send a Content-Length");
    }
    List<String> lengths = headers.getOrDefault("content-length", List.of());
    int length = 0;
    if (!lengths.isEmpty()) {
      if (lengths.size() > 1 || !lengths.get(0).matches("[0-9]{1,9}")) {
        return refuse(400, "malformed Content-Length");
      }
      length = Integer.parseInt(lengths.get(0));
      if (length > maxBodyBytes) {
        return refuse(413, "body longer than " + maxBodyBytes + " bytes");
      }
    }
    return new Head(requestLine[0], requestLine[1], headers, length);
  }

  private Outcome build(InetSocketAddress remote) {
    String target = head.target();
    if (!target.startsWith("/")) {
      return refuse(400, "the request target must be a path");
    }
    URI uri;
    try {
      uri = new URI(target);
    } catch (URISyntaxException e) {
      return refuse(400, "the request target is not a valid path");
    }
    byte[] body = Arrays.copyOfRange(buffer.array(), headEnd, headEnd + head.bodyLength());
    return new Complete(new HttpRequest(head.method(), uri.getPath(), uri.getRawQuery(), head.headers(), body, remote));
  }

  private static Refused refuse(int status, String why) {
    return new Refused(HttpResponse.text(status, why + "\n"));
  }
}
