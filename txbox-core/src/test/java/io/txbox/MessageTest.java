package io.txbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class MessageTest {

  @Test
  void theBuilderFillsAUuidV7IdAndTheDefaults() {
    Message m = Message.builder().type("T").destination("d").payload(new byte[] {1}).build();
    assertThat(m.id().version()).isEqualTo(7);
    assertThat(m.id().variant()).isEqualTo(2);
    assertThat(m.version()).isEqualTo(1);
    assertThat(m.contentType()).isEqualTo(Message.DEFAULT_CONTENT_TYPE);
    assertThat(m.availableAt()).isNull();
  }

  @Test
  void idsOfLaterMessagesSortAfterEarlierOnes() throws InterruptedException {
    Message first = Message.builder().type("T").destination("d").payload(new byte[0]).build();
    Thread.sleep(2);
    Message second = Message.builder().type("T").destination("d").payload(new byte[0]).build();
    assertThat(second.id().getMostSignificantBits() >>> 16).isGreaterThan(first.id().getMostSignificantBits() >>> 16);
  }

  @Test
  void aBuilderUsedTwiceBuildsTwoMessagesWithTheirOwnIds() {
    Message.Builder builder = Message.builder().type("T").destination("d").payload(new byte[0]);
    Message first = builder.build();
    Message second = builder.build();
    assertThat(second.id()).isNotEqualTo(first.id());
    assertThat(Message.builder().type("T").destination("d").payload(new byte[0]).id(first.id()).build().id())
        .as("an id set by the caller is kept").isEqualTo(first.id());
  }

  @Test
  void aTextPayloadIsWrittenAsUtf8() {
    Message m = Message.builder().type("t").destination("d").payload("{\"name\":\"Zoë\"}", "application/json").build();
    assertThat(m.payload()).isEqualTo("{\"name\":\"Zoë\"}".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertThat(m.contentType()).isEqualTo("application/json");
  }

  @Test
  void thePayloadIsCopiedInAndOut() {
    byte[] payload = {1, 2, 3};
    Message m = Message.builder().type("T").destination("d").payload(payload).build();
    payload[0] = 9;
    m.payload()[1] = 9;
    assertThat(m.payload()).containsExactly(1, 2, 3);
  }

  @Test
  void aDelaySetsTheAvailableTime() {
    Instant created = Instant.parse("2026-01-01T00:00:00Z");
    Message m = Message.builder().type("T").destination("d").payload(new byte[0])
        .createdAt(created).delay(Duration.ofSeconds(5)).build();
    assertThat(m.availableAt()).isEqualTo(created.plusSeconds(5));
  }

  @Test
  void missingOrOversizedFieldsAreRefusedByName() {
    assertThatThrownBy(() -> Message.builder().destination("d").payload(new byte[0]).build())
        .hasMessage("type must not be null or blank");
    assertThatThrownBy(() -> Message.builder().type("T").payload(new byte[0]).build())
        .hasMessage("destination must not be null or blank");
    assertThatThrownBy(() -> Message.builder().type("T").destination("d").build())
        .hasMessageStartingWith("payload must not be null");
    assertThatThrownBy(() -> Message.builder().type("T").destination("d").payload(new byte[0]).version(0).build())
        .hasMessage("version must be >= 1, was 0");
    assertThatThrownBy(() -> Message.builder().type("x".repeat(256)).destination("d").payload(new byte[0]).build())
        .hasMessage("type must be at most 255 characters, was 256");
  }
}
