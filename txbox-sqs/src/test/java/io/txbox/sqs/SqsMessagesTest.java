package io.txbox.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.Message;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;

/** The SQS wire format, without a server: what is encoded how, and what SQS could not carry. */
class SqsMessagesTest {

  private static Message.Builder message() {
    return Message.builder().type("OrderPlaced").destination("orders.fifo").key("order-1");
  }

  private static software.amazon.awssdk.services.sqs.model.Message asReceived(SqsMessages.Encoded e) {
    return software.amazon.awssdk.services.sqs.model.Message.builder().messageId("m-1").body(e.body())
        .messageAttributes(e.attributes()).build();
  }

  @Test
  void jsonTravelsAsTextAndBinaryAsBase64AndBothComeBackAsSent() {
    Message json = message().payload("{\"sku\":\"A-1\",\"note\":\"naïve ✓\"}", "application/json").build();
    Message binary = message().payload(new byte[] {0, (byte) 0xff, 7}).build();
    Message empty = message().payload(new byte[0]).build();

    assertThat(SqsMessages.encode(json, true).body()).isEqualTo("{\"sku\":\"A-1\",\"note\":\"naïve ✓\"}");
    assertThat(SqsMessages.encode(binary, true).body()).isEqualTo("AP8H");
    for (Message m : new Message[] {json, binary, empty}) {
      Message back = SqsMessages.toMessage(asReceived(SqsMessages.encode(m, true)), "orders.fifo");
      assertThat(back).usingRecursiveComparison().isEqualTo(m);
    }
  }

  @Test
  void onAFifoQueueTheKeyIsTheGroupAndTheIdTheDeduplicationId() {
    Message m = message().payload(new byte[] {1}).build();
    SqsMessages.Encoded fifo = SqsMessages.encode(m, true);
    assertThat(fifo.groupId()).isEqualTo("order-1");
    assertThat(fifo.deduplicationId()).isEqualTo(m.id().toString());
    SqsMessages.Encoded standard = SqsMessages.encode(m, false);
    assertThat(standard.groupId()).isNull();
    assertThat(standard.deduplicationId()).isNull();
  }

  @Test
  void aKeySqsRefusesAsAGroupIdIsHashedAndStillReadBackAsTheKey() {
    Message unicode = message().key("ключ ✓").payload(new byte[] {1}).build();
    Message longKey = message().key("k".repeat(200)).payload(new byte[] {1}).build();
    Message noKey = Message.builder().type("Ping").destination("orders.fifo").payload(new byte[] {1}).build();

    assertThat(SqsMessages.encode(unicode, true).groupId()).startsWith("txbox-sha256-").hasSizeLessThanOrEqualTo(128);
    assertThat(SqsMessages.encode(longKey, true).groupId()).startsWith("txbox-sha256-");
    assertThat(SqsMessages.encode(noKey, true).groupId()).as("a group of its own").isEqualTo(noKey.id().toString());
    assertThat(SqsMessages.toMessage(asReceived(SqsMessages.encode(unicode, true)), "orders.fifo").key())
        .isEqualTo("ключ ✓");
  }

  @Test
  void nineHeadersFitAndATenthIsRefusedNamingTheLimit() {
    Map<String, String> nine = new HashMap<>();
    for (int i = 0; i < 9; i++) {
      nine.put("h" + i, "v" + i);
    }
    assertThat(SqsMessages.encode(message().headers(nine).payload(new byte[] {1}).build(), true).attributes())
        .hasSize(10);
    nine.put("h9", "v9");
    Message ten = message().headers(nine).payload(new byte[] {1}).build();
    assertThatThrownBy(() -> SqsMessages.encode(ten, true)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("10 headers").hasMessageContaining("at most 10 message attributes")
        .hasMessageContaining("at most 9 headers");
  }

  @Test
  void aHeaderSqsCannotCarryIsRefusedByName() {
    assertThatThrownBy(() -> SqsMessages.encode(message().header("AWS.trace", "x").payload(new byte[] {1}).build(), true))
        .hasMessageContaining("header 'AWS.trace'");
    assertThatThrownBy(() -> SqsMessages.encode(message().header("x tenant", "x").payload(new byte[] {1}).build(), true))
        .hasMessageContaining("header 'x tenant'");
    assertThatThrownBy(() -> SqsMessages.encode(message().header("x-bell", "\u0007").payload(new byte[] {1}).build(), true))
        .hasMessageContaining("header 'x-bell' has a value SQS refuses");
  }

  @Test
  void aMessageFromAnotherPublisherGetsAStableIdItsGroupAsKeyAndTheQueueAsType() {
    software.amazon.awssdk.services.sqs.model.Message foreign = software.amazon.awssdk.services.sqs.model.Message
        .builder().messageId("sqs-1").body("{\"a\":1}")
        .attributes(Map.of(MessageSystemAttributeName.MESSAGE_GROUP_ID, "g-7",
            MessageSystemAttributeName.MESSAGE_DEDUPLICATION_ID, "dedup-7",
            MessageSystemAttributeName.SENT_TIMESTAMP, "1700000000000"))
        .messageAttributes(Map.of("tenant", MessageAttributeValue.builder().dataType("String").stringValue("acme").build()))
        .build();

    Message m = SqsMessages.toMessage(foreign, "orders.fifo");
    assertThat(m.type()).isEqualTo("orders.fifo");
    assertThat(m.key()).isEqualTo("g-7");
    assertThat(m.headers()).containsExactly(Map.entry("tenant", "acme"));
    assertThat(new String(m.payload(), StandardCharsets.UTF_8)).isEqualTo("{\"a\":1}");
    assertThat(SqsMessages.toMessage(foreign.toBuilder().messageId("sqs-2").build(), "orders.fifo").id())
        .as("a redelivery under another SQS message id is still a duplicate").isEqualTo(m.id());
  }

  @Test
  void malformedMetadataIsAnErrorNoRetryCanFix() {
    software.amazon.awssdk.services.sqs.model.Message bad = software.amazon.awssdk.services.sqs.model.Message.builder()
        .messageId("x").body("b").messageAttributes(Map.of(SqsMessages.METADATA,
            MessageAttributeValue.builder().dataType("String").stringValue("id=not-a-uuid&type=T").build()))
        .build();
    assertThatThrownBy(() -> SqsMessages.toMessage(bad, "q")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("id must be a UUID");
  }
}
