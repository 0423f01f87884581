package io.txbox.server;

import java.util.regex.Pattern;

/**
 * Text from outside (event keys and payloads, broker errors, typed arguments) made safe to print
 * on an operator's terminal: control characters, line breaks and bidirectional overrides are shown
 * as visible escapes ({@code \e[2J} prints as {@code \u001b[2J}), so that no event can clear the
 * screen, set the window title, forge an output line or reorder the letters of a file name.
 *
 * <pre>{@code
 * out.println("key: " + TerminalText.of(deadLetter.key()));
 * }</pre>
 */
public final class TerminalText {
  /** Longest one-line error: enough to name the setting and quote its value, never a screenful. */
  public static final int ERROR_LIMIT = 500;
  private static final Pattern LINE_BREAKS = Pattern.compile("\\s*\\R\\s*");

  private TerminalText() {}

  /** {@code text} with every control and bidi formatting character as a {@code \\uXXXX} escape; null stays null. */
  public static String of(String text) {
    if (text == null) {
      return null;
    }
    StringBuilder safe = null;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (changesTheDisplay(c)) {
        if (safe == null) {
          safe = new StringBuilder(text.length() + 16).append(text, 0, i);
        }
        safe.append(String.format("\\u%04x", (int) c));
      } else if (safe != null) {
        safe.append(c);
      }
    }
    return safe == null ? text : safe.toString();
  }

  /**
   * One line of at most {@code limit} characters, with how much was left out: line breaks (a
   * PostgreSQL error's "Position:" line) become "; ", everything else as {@link #of}.
   */
  public static String line(String text, int limit) {
    return of(text == null ? null : LINE_BREAKS.matcher(text.strip()).replaceAll("; "), limit);
  }

  /** {@link #of} cut to {@code limit} characters, with how much was left out. */
  public static String of(String text, int limit) {
    String safe = of(text);
    return safe == null || safe.length() <= limit ? safe
        : safe.substring(0, limit) + "... (" + (safe.length() - limit) + " more characters)";
  }

  /**
   * True for a character that acts on the display instead of showing: a control character
   * (escape, line break, bell) or a bidirectional embedding, override, isolate or mark.
   */
  public static boolean changesTheDisplay(char c) {
    return Character.isISOControl(c) // C0, DEL, C1: ESC, CR, LF, CSI
        || (c >= '\u202a' && c <= '\u202e') // embeddings and overrides
        || (c >= '\u2066' && c <= '\u2069') // isolates
        || c == '\u200e' || c == '\u200f' || c == '\u061c'; // direction marks
  }
}
