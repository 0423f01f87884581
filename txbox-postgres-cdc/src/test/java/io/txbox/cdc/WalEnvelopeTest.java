package io.txbox.cdc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.Message;
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
    assertThatThrownBy(() -> WalEnvelope.decode(new byte[] {2, 0, 0, 0}))
        .hasMessageContaining("envelope format 2").hasMessageContaining("upgrade the relay");
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
