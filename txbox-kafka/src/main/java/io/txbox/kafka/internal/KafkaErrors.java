package io.txbox.kafka.internal;

import io.txbox.spi.PermanentPublishException;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;

/** Which Kafka errors no retry can fix. */
public final class KafkaErrors {
  private KafkaErrors() {}

  /** The error as the relay should see it: permanent ones wrapped, others as they are. */
  public static Exception classify(Exception error, String topic) {
    if (error instanceof RecordTooLargeException || error instanceof RecordBatchTooLargeException) {
      return new PermanentPublishException("the record is larger than topic " + topic
          + " or the producer accepts (max.request.size, message.max.bytes): " + error.getMessage(), error);
    }
    if (error instanceof InvalidTopicException || error instanceof InvalidRecordException
        || error instanceof SerializationException) {
      return new PermanentPublishException("topic " + topic + " refused the record: " + error.getMessage(), error);
    }
    return error;
  }
}
