package io.txbox.kafka.internal;

import io.txbox.spi.PermanentPublishException;
import java.util.OptionalInt;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;

/** Which Kafka errors no retry can fix. */
public final class KafkaErrors {
  private static final String FIX = "raise the topic's max.message.bytes (and consumers' max.partition.fetch.bytes),"
      + " or send smaller events, then retry the dead letter";

  private KafkaErrors() {}

  /**
   * Why a record of {@code size} bytes (as a batch of its own) cannot go to {@code topic}, naming the
   * topic's limit and the producer's own, {@code maxRequestSize}.
   */
  public static String tooLarge(String topic, int size, OptionalInt topicLimit, int maxRequestSize) {
    return "the event is " + size + " bytes as a Kafka record batch, and topic " + topic + " accepts at most "
        + topicLimit.getAsInt() + " bytes (its max.message.bytes; this producer sends at most " + maxRequestSize
        + ", its max.request.size): " + FIX;
  }

  /** The error as the relay should see it: permanent ones wrapped, others as they are. */
  public static Exception classify(Exception error, String topic) {
    return classify(error, topic, OptionalInt.empty());
  }

  /**
   * The error as the relay should see it, naming the topic's {@code max.message.bytes} when a
   * record was refused for its size and the limit is known.
   */
  public static Exception classify(Exception error, String topic, OptionalInt topicLimit) {
    if (error instanceof RecordTooLargeException || error instanceof RecordBatchTooLargeException) {
      String limit = topicLimit.isPresent()
          ? "topic " + topic + " accepts at most " + topicLimit.getAsInt() + " bytes (its max.message.bytes)"
          : "the record is larger than topic " + topic + " accepts (max.message.bytes)";
      return new PermanentPublishException(limit + " or the producer sends (max.request.size): "
          + error.getMessage() + "; " + FIX, error);
    }
    if (error instanceof InvalidTopicException || error instanceof InvalidRecordException
        || error instanceof SerializationException) {
      return new PermanentPublishException("topic " + topic + " refused the record: " + error.getMessage(), error);
    }
    return error;
  }
}
