package io.txbox.sqs.internal;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.QueueDoesNotExistException;

/** Queue URLs by destination (a queue's name or its URL), asked of SQS once each. */
public final class QueueUrls {
  /** A queue: FIFO when its name ends in {@code .fifo}, as SQS requires of FIFO queues. */
  public record Queue(String name, String url, boolean fifo) {}

  private final SqsClient client;
  private final Map<String, Queue> known = new ConcurrentHashMap<>();

  public QueueUrls(SqsClient client) {
    this.client = client;
  }

  /**
   * The queue {@code destination} names.
   *
   * @throws QueueDoesNotExistException when there is no such queue
   */
  public Queue of(String destination) {
    Queue queue = known.get(destination);
    if (queue != null) {
      return queue;
    }
    String url = destination.startsWith("https://") || destination.startsWith("http://") ? destination
        : client.getQueueUrl(r -> r.queueName(destination)).queueUrl();
    String name = url.substring(url.lastIndexOf('/') + 1);
    queue = new Queue(name, url, name.endsWith(".fifo"));
    known.put(destination, queue);
    return queue;
  }

  /** Forgets a queue that went away, so that the next use asks again. */
  public void forget(String url) {
    known.values().removeIf(q -> q.url().equals(url));
  }
}
