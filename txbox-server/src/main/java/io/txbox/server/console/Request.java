package io.txbox.server.console;

import io.txbox.server.TerminalText;
import io.txbox.server.console.Sessions.Session;
import io.txbox.server.http.HttpRequest;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** One HTTP request: its path, its parameters (query and form) and the session it belongs to. */
final class Request {
  /** Largest form accepted: forms here hold a few short fields. The server refuses a longer body (413). */
  static final int MAX_FORM_BYTES = 64 * 1024;
  /** Longest parameter value: a key, a type or a filter, never a document. */
  static final int MAX_PARAM_LENGTH = 4096;
  static final String SESSION_COOKIE = "txbox_session";

  private final HttpRequest request;
  private final Map<String, String> params;
  private final Optional<Session> session;

  private Request(HttpRequest request, Map<String, String> params, Optional<Session> session) {
    this.request = request;
    this.params = params;
    this.session = session;
  }

  static Request read(HttpRequest request, Sessions sessions) {
    Map<String, String> params = new HashMap<>();
    parse(request.rawQuery(), params);
    if (request.method().equals("POST")) {
      parse(new String(request.body(), StandardCharsets.UTF_8), params);
    }
    return new Request(request, params, sessions.find(cookie(request, SESSION_COOKIE)));
  }

  String path() {
    return request.path();
  }

  boolean isPost() {
    return request.method().equals("POST");
  }

  /** A request header, or null. */
  String header(String name) {
    return request.header(name);
  }

  /** Every value of a request header, in order; empty when it is absent. */
  List<String> headers(String name) {
    return request.headerValues(name);
  }

  /** The address the request came from (a proxy's, behind one). */
  String clientAddress() {
    return request.remote().getAddress().getHostAddress();
  }

  Optional<Session> session() {
    return session;
  }

  /** Who acts, for the audit table. */
  String operator() {
    return session.map(Session::user).orElse("anonymous");
  }

  /** The parameter, or null when absent or blank. */
  String param(String name) {
    String value = params.get(name);
    return value == null || value.isBlank() ? null : value.trim();
  }

  /**
   * Reads the parameters; a value no txbox field can hold is refused here, naming the parameter,
   * rather than reaching the database as an error: a NUL character, or more than {@value
   * #MAX_PARAM_LENGTH} characters.
   */
  private static void parse(String encoded, Map<String, String> into) {
    if (encoded == null || encoded.isEmpty()) {
      return;
    }
    for (String pair : encoded.split("&")) {
      int eq = pair.indexOf('=');
      String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
      String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
      if (value.indexOf('\0') >= 0) {
        throw new IllegalArgumentException("parameter '" + TerminalText.of(name, 40) + "' holds a NUL character, which no txbox"
            + " value can hold: remove it");
      }
      if (value.length() > MAX_PARAM_LENGTH) {
        throw new IllegalArgumentException("parameter '" + TerminalText.of(name, 40) + "' has " + value.length()
            + " characters, over " + MAX_PARAM_LENGTH + ": shorten it");
      }
      into.putIfAbsent(name, value);
    }
  }

  /** The value of the cookie {@code name} the browser sent, or null. */
  String cookie(String name) {
    return cookie(request, name);
  }

  private static String cookie(HttpRequest request, String name) {
    for (String header : request.headerValues("Cookie")) {
      for (String part : header.split(";")) {
        String[] kv = part.trim().split("=", 2);
        if (kv.length == 2 && kv[0].equals(name)) {
          return kv[1];
        }
      }
    }
    return null;
  }
}
