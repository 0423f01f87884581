package io.txbox.sqs.internal;

import io.txbox.spi.support.LoopGuard;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.Message;

/**
 * The SQS messages a subscriber holds: their visibility timeout extended every third of it, so
 * that SQS hands none of them to another receiver while it is handled or retried; deleted once
 * the inbox committed; made visible again at once when the subscriber lets them go unhandled.
 */
public final class InHand implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(InHand.class);
  private static final int MAX_BATCH_ENTRIES = 10;

  private final SqsClient client;
  private final String queueUrl;
  private final Duration visibilityTimeout;
  private final String consumer;
  private final LoopGuard loop;
  private final Map<String, String> receipts = new ConcurrentHashMap<>(); // message id -> receipt handle
  private final ScheduledExecutorService keeper;

  private InHand(SqsClient client, String queueUrl, Duration visibilityTimeout, String consumer) {
    this.client = client;
    this.queueUrl = queueUrl;
    this.visibilityTimeout = visibilityTimeout;
    this.consumer = consumer;
    this.loop = new LoopGuard("txbox subscriber " + consumer + " extending its messages' visibility");
    this.keeper = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "txbox-sqs-visibility-" + consumer);
      t.setDaemon(true);
      return t;
    });
  }

  /** Starts extending the visibility of what is in hand. */
  public static InHand start(SqsClient client, String queueUrl, Duration visibilityTimeout, String consumer) {
    InHand inHand = new InHand(client, queueUrl, visibilityTimeout, consumer);
    long every = Math.max(500, visibilityTimeout.toMillis() / 3);
    inHand.keeper.scheduleWithFixedDelay(loopStep(inHand), every, every, TimeUnit.MILLISECONDS);
    return inHand;
  }

  private static Runnable loopStep(InHand inHand) {
    return () -> inHand.loop.attempt(inHand::extendAll);
  }

  /** Takes a receive's messages in hand. */
  public void received(List<Message> messages) {
    messages.forEach(m -> receipts.put(m.messageId(), m.receiptHandle()));
  }

  /** Deletes a handled message from the queue; if that fails, it comes again and the inbox absorbs it. */
  public void delete(Message m) {
    receipts.remove(m.messageId());
    try {
      client.deleteMessage(r -> r.queueUrl(queueUrl).receiptHandle(m.receiptHandle()));
    } catch (SdkException e) {
      log.debug("subscriber {}: delete of message {} failed; it comes again and the inbox absorbs it: {}",
          consumer, m.messageId(), e.toString());
    }
  }

  /** Stops extending a message's visibility: it comes again once its visibility timeout is over. */
  public void leave(Message m) {
    receipts.remove(m.messageId());
  }

  /** Makes whichever of {@code messages} are still in hand visible again at once, for the next receiver. */
  public void releaseAll(List<Message> messages) {
    List<ChangeMessageVisibilityBatchRequestEntry> entries = new ArrayList<>();
    for (Message m : messages) {
      if (receipts.remove(m.messageId()) != null) {
        entries.add(entry(m.messageId(), m.receiptHandle(), 0));
      }
    }
    try {
      change(entries);
    } catch (SdkException e) {
      log.debug("subscriber {}: could not release {} messages; they come again after their visibility timeout: {}",
          consumer, entries.size(), e.toString());
    }
  }

  private void extendAll() {
    List<ChangeMessageVisibilityBatchRequestEntry> entries = new ArrayList<>();
    receipts.forEach((id, receipt) -> entries.add(entry(id, receipt, (int) visibilityTimeout.toSeconds())));
    change(entries);
  }

  private void change(List<ChangeMessageVisibilityBatchRequestEntry> entries) {
    for (int from = 0; from < entries.size(); from += MAX_BATCH_ENTRIES) {
      List<ChangeMessageVisibilityBatchRequestEntry> part =
          entries.subList(from, Math.min(entries.size(), from + MAX_BATCH_ENTRIES));
      client.changeMessageVisibilityBatch(r -> r.queueUrl(queueUrl).entries(part));
    }
  }

  private static ChangeMessageVisibilityBatchRequestEntry entry(String id, String receipt, int seconds) {
    // batch entry ids allow only A-Z a-z 0-9 - _ and 80 characters; SQS message ids are UUIDs
    return ChangeMessageVisibilityBatchRequestEntry.builder().id(id).receiptHandle(receipt)
        .visibilityTimeout(seconds).build();
  }

  /** Whether the last extension failed (SQS unreachable, say); it goes on trying. */
  public boolean isTroubled() {
    return loop.isTroubled();
  }

  @Override
  public void close() {
    keeper.shutdownNow();
  }
}
