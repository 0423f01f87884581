package io.txbox.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import io.txbox.Message;
import io.txbox.spi.PermanentPublishException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** txbox's wire format on NATS, without a server: what the headers hold and how they read back. */
class NatsMessagesTest {
  private final Message message = Message.builder().type("Order&Placed=v%2+").version(3).destination("orders")
      .key("ключ & =?utf-8?b?x?= 100%").payload("{}".getBytes(StandardCharsets.UTF_8), "application/json; charset=utf-8")
      .header("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
      .createdAt(Instant.parse("2026-11-25T09:40:01.123456Z"))
      .build();

  @Test
  void txboxsMetadataTravelsInOneHeaderBesidesTheIdAndTheMessagesOwnHeaders() throws Exception {
    Headers headers = NatsMessages.headers(message);

    assertThat(headers.keySet()).containsExactlyInAnyOrder("Nats-Msg-Id", "txbox", "traceparent");
    assertThat(headers.getLast("txbox")).as("printable US-ASCII, readable where it can be")
        .matches("[\\x21-\\x7E]+").contains("version=3", "created-at=2026-11-25T09:40:01.123456Z");
    assertArrivesAsSent(NatsMessages.toMessage(received(headers)));
    assertThat(NatsMessages.key(received(headers))).isEqualTo(message.key());
  }

  @Test
  @SuppressWarnings("deprecation")
  void messagesInTheSeparateHeadersOfTxbox01AreWrittenOnRequestAndStillRead() throws Exception {
    Headers headers = NatsMessages.headers(message, NatsMessages.Format.SEPARATE_HEADERS);

    assertThat(headers.keySet()).containsExactlyInAnyOrder("Nats-Msg-Id", "txbox-type", "txbox-version",
        "content-type", "txbox-key", "txbox-created-at", "traceparent");
    assertArrivesAsSent(NatsMessages.toMessage(received(headers)));
    assertThat(NatsMessages.key(received(headers))).isEqualTo(message.key());
  }

  @Test
  void aMalformedMetadataHeaderMakesTheMessageUnreadableAndSaysWhatIsWrong() {
    Headers notAForm = new Headers().put("Nats-Msg-Id", message.id().toString()).put("txbox", "OrderPlaced");
    Headers badVersion = new Headers().put("Nats-Msg-Id", message.id().toString())
        .put("txbox", "type=OrderPlaced&version=three");
    Headers badEscape = new Headers().put("Nats-Msg-Id", message.id().toString()).put("txbox", "type=Order%G1");

    assertThatThrownBy(() -> NatsMessages.toMessage(received(notAForm))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("header txbox must be form-encoded name=value pairs, was 'OrderPlaced'");
    assertThatThrownBy(() -> NatsMessages.key(received(notAForm))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> NatsMessages.toMessage(received(badVersion)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("version").hasMessageContaining("three");
    assertThatThrownBy(() -> NatsMessages.toMessage(received(badEscape))).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aHeaderNamedLikeOneOfTxboxsOwnIsRefusedForGood() {
    Message clash = Message.builder().type("T").destination("orders").payload(new byte[0]).header("txbox", "x").build();

    assertThatThrownBy(() -> NatsMessages.headers(clash)).isInstanceOf(PermanentPublishException.class)
        .hasMessageContaining("header name 'txbox'").hasMessageContaining("rename it");
  }

  private void assertArrivesAsSent(Message got) {
    assertThat(got.id()).isEqualTo(message.id());
    assertThat(got.type()).isEqualTo(message.type());
    assertThat(got.version()).isEqualTo(3);
    assertThat(got.key()).isEqualTo(message.key());
    assertThat(got.contentType()).isEqualTo(message.contentType());
    assertThat(got.createdAt()).isEqualTo(message.createdAt());
    assertThat(got.headers()).isEqualTo(message.headers());
    assertThat(got.payload()).isEqualTo(message.payload());
  }

  private static io.nats.client.Message received(Headers headers) {
    return NatsMessage.builder().subject("orders").headers(headers).data("{}".getBytes(StandardCharsets.UTF_8))
        .build();
  }
}
