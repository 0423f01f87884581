package io.txbox.spi;

import io.txbox.Message;
import java.util.List;

/**
 * Sends batches of messages to a broker and waits for the broker's acknowledgement of each.
 *
 * <p>{@link #publish} returns only when every message of the batch is acknowledged or has failed;
 * the relay checkpoints a message only after it and every earlier one of its bucket were
 * acknowledged. A failure the broker will never accept (too large, no such destination) should be
 * a {@link PermanentPublishException}, which dead-letters the message at once.
 *
 * <pre>{@code
 * Publisher kafka = KafkaPublisher.builder().bootstrapServers("localhost:9092").build();
 * PublishResult result = kafka.publish(List.of(message));
 * }</pre>
 */
public interface Publisher extends AutoCloseable {

  /** Sends the batch and waits for every acknowledgement; never throws for one message's failure. */
  PublishResult publish(List<Message> batch);

  /** Releases the broker connection; called once when the relay stops. */
  @Override
  void close();
}
