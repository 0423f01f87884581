package io.txbox.server.console;

import java.util.ArrayList;
import java.util.List;

/** What the console answers: a page, a redirect or an error, and the cookies it sets. */
record Response(int status, String contentType, String body, String location, List<String> cookies) {
  private static final String HTML = "text/html; charset=utf-8";
  /** Most characters of an error message shown on a page. */
  private static final int MESSAGE_LIMIT = 2000;

  static Response page(int status, String html) {
    return new Response(status, HTML, html, null, List.of());
  }

  static Response redirect(String location) {
    return new Response(303, HTML, "", location, List.of());
  }

  static Response css(String css) {
    return new Response(200, "text/css; charset=utf-8", css, null, List.of());
  }

  /** A page that says what went wrong, with a way back. */
  static Response error(int status, String message) {
    return page(status, "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>txbox: " + status
        + "</title><link rel=\"stylesheet\" href=\"/console.css\"></head><body><main><h1>" + status + "</h1>"
        + "<p class=\"bad\" id=\"error\">" + Html.capped(message, MESSAGE_LIMIT, "the console's log has it all") + "</p><p><a href=\"/\">Back to the overview</a></p>"
        + "</main></body></html>");
  }

  /** This response setting one more cookie, after those it sets already. */
  Response withCookie(String value) {
    List<String> more = new ArrayList<>(cookies);
    more.add(value);
    return new Response(status, contentType, body, location, List.copyOf(more));
  }
}
