package io.txbox.bench;

import io.txbox.spi.Publisher;
import io.txbox.sqs.SqsMessages;
import io.txbox.sqs.SqsPublisher;
import io.txbox.testkit.ElasticMqServer;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.IntFunction;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequestEntry;

/**
 * An SQS-compatible server of its own (ElasticMQ, in a JVM of its own) with FIFO queues, and the
 * AWS SDK's own {@code SendMessageBatch} (ten messages a request, one request at a time, as the
 * relay sends) as the reference, through the same small HTTP client, after 20,000 messages that
 * warm ElasticMQ's JVM up.
 */
final class SqsBench implements BenchBroker {
  private static final String REGION = "us-east-1";
  private static final String RELAY_QUEUE = RELAY_DESTINATION + ".fifo";
  private static final int WARM_UP = 20_000;
  private final ElasticMqServer server = ElasticMqServer.start();
  private final SqsClient sqs;
  private int references;

  SqsBench() {
    sqs = SqsClient.builder().endpointOverride(URI.create(server.address())).region(Region.of(REGION))
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("bench", "bench")))
        .httpClient(UrlConnectionHttpClient.create()).build();
    createQueue(RELAY_QUEUE);
    bareRate(WARM_UP); // ElasticMQ's JVM starts cold: the first 20,000 messages went at two thirds of the rate after
  }

  private String createQueue(String name) {
    return sqs.createQueue(r -> r.queueName(name).attributes(Map.of(QueueAttributeName.FIFO_QUEUE, "true")))
        .queueUrl();
  }

  @Override
  public String reference() {
    return "AWS SDK SendMessageBatch to a new ElasticMQ FIFO queue, 10 per request, one request at a time, 300 B";
  }

  @Override
  public String relayDestination() {
    return RELAY_QUEUE;
  }

  @Override
  public Publisher publisher() {
    return SqsPublisher.builder().endpoint(server.address()).region(REGION).credentials("bench", "bench").build();
  }

  @Override
  public double bareRate(int messages) {
    String body = "x".repeat(300);
    return sendAll(messages, i -> SendMessageBatchRequestEntry.builder().id("e" + (i % 10)).messageBody(body)
        .messageGroupId("customer-" + (i % 10_000)).messageDeduplicationId(UUID.randomUUID().toString()).build());
  }

  @Override
  public double bareRateWithRelayHeaders(int messages) {
    return sendAll(messages, i -> {
      SqsMessages.Encoded e = SqsMessages.encode(Events.orderPlaced("bench-reference.fifo", i), true);
      return SendMessageBatchRequestEntry.builder().id("e" + (i % 10)).messageBody(e.body())
          .messageAttributes(e.attributes()).messageGroupId(e.groupId()).messageDeduplicationId(e.deduplicationId())
          .build();
    });
  }

  /**
   * Messages per second into a new, empty queue, as the relay's starts: ElasticMQ slows down as a
   * queue fills (the same client measured 1,000-1,300 msgs/s into an empty FIFO queue and 830-1,000
   * into one holding 40,000 messages). Only the requests are timed; each batch is built before.
   */
  private double sendAll(int messages, IntFunction<SendMessageBatchRequestEntry> entry) {
    String referenceUrl = createQueue("bench-reference-" + ++references + ".fifo");
    long timed = 0;
    for (int sent = 0; sent < messages; sent += 10) {
      List<SendMessageBatchRequestEntry> batch = new ArrayList<>(10);
      for (int i = sent; i < Math.min(messages, sent + 10); i++) {
        batch.add(entry.apply(i));
      }
      long start = System.nanoTime();
      var response = sqs.sendMessageBatch(r -> r.queueUrl(referenceUrl).entries(batch));
      timed += System.nanoTime() - start;
      if (!response.failed().isEmpty()) {
        throw new IllegalStateException("the reference's batch failed: " + response.failed());
      }
    }
    return messages / (timed / 1e9);
  }

  @Override
  public void close() {
    sqs.close();
    server.close();
  }
}
