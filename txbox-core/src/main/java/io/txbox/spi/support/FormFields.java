package io.txbox.spi.support;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads txbox's metadata where a transport carries it form-encoded in one field ({@code
 * name=value&name=value}, values percent-encoded as UTF-8): the NATS {@code txbox} header and the
 * SQS {@code txbox} attribute.
 *
 * <pre>{@code
 * Map<String, String> meta = FormFields.decode(header, "header txbox");
 * }</pre>
 */
public final class FormFields {
  private FormFields() {}

  /**
   * The fields of {@code form}, in order.
   *
   * @param where what holds the form, for the error, such as {@code header txbox}
   * @throws IllegalArgumentException when {@code form} is not name=value pairs or a value's escape is broken
   */
  public static Map<String, String> decode(String form, String where) {
    Map<String, String> values = new LinkedHashMap<>();
    for (String pair : form.split("&")) {
      int eq = pair.indexOf('=');
      if (eq < 1) {
        throw new IllegalArgumentException(where + " must be form-encoded name=value pairs, was '" + form + "'");
      }
      values.put(pair.substring(0, eq), URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
    }
    return values;
  }
}
