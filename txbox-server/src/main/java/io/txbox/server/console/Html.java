package io.txbox.server.console;

import io.txbox.server.TerminalText;
import java.util.List;

/** HTML built by hand, every value escaped: small pages, no template engine, no JavaScript. */
final class Html {
  private Html() {}

  /**
   * {@code value} safe in text and in a quoted attribute; control characters (line breaks and tabs
   * aside) and bidirectional overrides show as visible escapes, so that {@code Order\u202egnp.exe}
   * cannot pass for {@code Orderexe.png}.
   */
  static String esc(Object value) {
    if (value == null) {
      return "";
    }
    String s = value.toString();
    StringBuilder out = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '<' -> out.append("&lt;");
        case '>' -> out.append("&gt;");
        case '&' -> out.append("&amp;");
        case '"' -> out.append("&quot;");
        case '\'' -> out.append("&#39;");
        case '\n', '\t' -> out.append(c);
        default -> {
          if (TerminalText.changesTheDisplay(c)) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.toString();
  }

  /**
   * The first {@code limit} characters of {@code text}, escaped, and what was left out with where
   * to get the whole: a page never grows with what an event or a broker wrote.
   */
  static String capped(String text, int limit, String whereTheWholeIs) {
    if (text == null || text.length() <= limit) {
      return esc(text);
    }
    return esc(text.substring(0, limit)) + "<span class=\"cut\">... " + (text.length() - limit)
        + " more characters not shown: " + esc(whereTheWholeIs) + "</span>";
  }

  /** A whole page: the navigation, who is signed in, and {@code body}. */
  static String page(String title, Request request, String body) {
    String who = request.session()
        .map(s -> esc(s.user()) + " (" + s.role().name().toLowerCase(java.util.Locale.ROOT) + ") "
            + form("/logout", request, "", "Sign out"))
        .orElse("anonymous viewer");
    return "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>txbox: " + esc(title)
        + "</title><link rel=\"stylesheet\" href=\"/console.css\"></head><body><header><b>txbox</b>"
        + " <a href=\"/\">Overview</a> <a href=\"/dead-letters\">Dead letters</a> <a href=\"/replay\">Replay</a>"
        + " <a href=\"/audit\">Audit</a><span class=\"who\">" + who + "</span></header><main><h1>" + esc(title)
        + "</h1>" + body + "</main></body></html>";
  }

  /** A form that POSTs {@code fields} (already HTML) and the session's CSRF token to {@code action}. */
  static String form(String action, Request request, String fields, String button) {
    String csrf = request.session().map(s -> hidden("csrf", s.csrfToken())).orElse("");
    return "<form method=\"post\" action=\"" + esc(action) + "\" class=\"inline\">" + csrf + fields
        + "<button type=\"submit\">" + esc(button) + "</button></form>";
  }

  static String hidden(String name, Object value) {
    return "<input type=\"hidden\" name=\"" + esc(name) + "\" value=\"" + esc(value) + "\">";
  }

  static String field(String label, String name, String value) {
    return "<label>" + esc(label) + " <input name=\"" + esc(name) + "\" value=\"" + esc(value) + "\"></label> ";
  }

  /** A table with a header row; cells are HTML already. */
  static String table(List<String> headers, List<List<String>> rows, String empty) {
    if (rows.isEmpty()) {
      return "<p class=\"empty\">" + esc(empty) + "</p>";
    }
    StringBuilder html = new StringBuilder("<table><tr>");
    headers.forEach(h -> html.append("<th>").append(esc(h)).append("</th>"));
    html.append("</tr>");
    for (List<String> row : rows) {
      html.append("<tr>");
      row.forEach(cell -> html.append("<td>").append(cell).append("</td>"));
      html.append("</tr>");
    }
    return html.append("</table>").toString();
  }

  static final String CSS = """
      body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
      header{background:#1f3b57;color:#fff;padding:8px 16px}header a{color:#fff;margin-left:16px}
      header .who{float:right}header form button{margin-left:8px}
      main{padding:8px 16px}table{border-collapse:collapse;margin:8px 0}
      td,pre{unicode-bidi:isolate}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}th{background:#eef2f6}
      .bad{color:#b00020;font-weight:bold}.ok{color:#1b7d2c;font-weight:bold}.empty{color:#777}
      form.inline{display:inline}pre{background:#f6f6f6;padding:8px;white-space:pre-wrap}
      .cut{display:block;color:#777;font-style:italic}.notice{background:#fff3cd;padding:6px 10px;border:1px solid #e6d08a}
      """;
}
