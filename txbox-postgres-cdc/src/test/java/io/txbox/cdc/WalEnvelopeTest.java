package io.txbox.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.entry;

import io.txbox.Message;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class WalEnvelopeTest {

  @Test
  void aMessageReadsBackEqualWithEveryField() {
    Message m = Message.builder().destination("orders").key("k-ü").type("OrderPlaced").version(3)
        .payload("{\"a\":1}", "application/json").header("traceparent", "00-ab").header("tenant", "")
        .delay(Duration.ofMinutes(5)).build();
    Message back = WalEnvelope.decode(WalEnvelope.encode(m));
    assertThat(back).usingRecursiveComparison().isEqualTo(m);
  }

  @Test
  void nullKeyAndEmptyPayloadSurvive() {
    Message m = Message.builder().destination("d").type("T").payload(new byte[0]).build();
    Message back = WalEnvelope.decode(WalEnvelope.encode(m));
    assertThat(back.key()).isNull();
    assertThat(back.payload()).isEmpty();
    assertThat(back.availableAt()).isNull();
  }

  @Test
  void aTruncatedEnvelopeIsRefusedWithWhatIsWrong() {
    byte[] whole = WalEnvelope.encode(Message.builder().destination("d").type("T").payload(new byte[0]).build());
    assertThatThrownBy(() -> WalEnvelope.decode(Arrays.copyOf(whole, 20)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ends before its last field");
    assertThatThrownBy(() -> WalEnvelope.decode(new byte[] {1, 0, 0}))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ends before its last field");
  }

  @Test
  void aNewerFormatIsNamedNotGuessed() {
    assertThatThrownBy(() -> WalEnvelope.decode(new byte[] {3, 0, 0, 0}))
        .hasMessageContaining("envelope format 3").hasMessageContaining("upgrade the relay");
  }

  @Test
  void theEmitFunctionsFormatReadsItsHeadersFromTheirJsonText() {
    Message m = Message.builder().destination("orders").key("k").type("OrderPlaced").payload("{}", "application/json")
        .build();
    Message back = WalEnvelope.decode(withJsonHeaders(m, "{\"n\": 5, \"q\": \"say \\\"hi\\\" \\u00fc\", \"traceparent\": \"00-ab\"}"));
    assertThat(back.headers()).containsOnly(entry("n", "5"), entry("q", "say \"hi\" ü"), entry("traceparent", "00-ab"));
    assertThat(back).usingRecursiveComparison().ignoringFields("headers").isEqualTo(m);
  }

  @Test
  void headersThatAreNotAJsonObjectAreRefusedNamingThem() {
    Message m = Message.builder().destination("d").type("T").payload(new byte[0]).build();
    assertThatThrownBy(() -> WalEnvelope.decode(withJsonHeaders(m, "[1]")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("headers are not a JSON object");
  }

  /** Format 2, as the emit SQL function writes it: {@code m}'s envelope with the headers as one JSON text. */
  private static byte[] withJsonHeaders(Message m, String json) {
    byte[] one = WalEnvelope.encode(m); // m has no headers: its header count is 0
    int at = 1 + 16 + textLength(m.destination()) + textLength(m.key()) + textLength(m.type()) + 4
        + textLength(m.contentType());
    byte[] headers = json.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(one.length + headers.length).put((byte) WalEnvelope.FORMAT_JSON_HEADERS)
        .put(one, 1, at - 1).putInt(headers.length).put(headers).put(one, at + 4, one.length - at - 4).array();
  }

  private static int textLength(String value) {
    return 4 + (value == null ? 0 : value.getBytes(StandardCharsets.UTF_8).length);
  }

  @Test
  void aFieldThatBreaksTheMessageRulesIsNamed() {
    Message m = Message.builder().destination("d").type("T").payload(new byte[0]).build();
    byte[] bytes = WalEnvelope.encode(m);
    String text = new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1).replace("\u0000\u0000\u0000\u0001T", "\u0000\u0000\u0000\u0001 ");
    assertThatThrownBy(() -> WalEnvelope.decode(text.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1)))
        .hasMessageContaining("type must not be null or blank");
  }
}
