package io.txbox.server;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * An event payload for people: as text when it is UTF-8, else {@code base64:...}. Shared by
 * {@code txbox dead-letters show} and the console.
 *
 * <pre>{@code
 * out.println(PayloadText.of(message.payload()));
 * }</pre>
 */
public final class PayloadText {
  private PayloadText() {}

  public static String of(byte[] payload) {
    try {
      return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(payload)).toString();
    } catch (CharacterCodingException e) {
      return "base64:" + Base64.getEncoder().encodeToString(payload);
    }
  }
}
