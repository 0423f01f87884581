package io.txbox.demo;

import io.txbox.testkit.ElasticMqServer;
import java.io.PrintStream;
import java.net.URI;
import java.util.List;
import java.util.Map;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.SqsClientBuilder;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * Amazon SQS: one FIFO queue, on the given SQS-compatible endpoint or on an ElasticMQ of the
 * demo's own. Every inventory process receives from it; SQS hands each SKU (the message group) to
 * one receiver at a time, and a killed process's messages come again after their visibility
 * timeout.
 */
final class SqsDemoBroker implements DemoBroker {
  private static final String REGION = "us-east-1";
  private static final String KEY = "demo";
  private final ElasticMqServer own;
  private final String endpoint;
  private final String queue;
  private final SqsClient sqs;
  private final String url;

  SqsDemoBroker(String endpoint, String run, PrintStream out) {
    if (endpoint == null) {
      out.println("starting ElasticMQ, an SQS-compatible server (from Maven Central; --sqs-endpoint to use yours)...");
      own = ElasticMqServer.start();
      endpoint = own.address();
    } else {
      own = null;
    }
    this.endpoint = endpoint;
    this.queue = "orders-" + run + ".fifo";
    SqsClientBuilder b = SqsClient.builder().endpointOverride(URI.create(endpoint)).region(Region.of(REGION))
        .httpClient(UrlConnectionHttpClient.create());
    b.credentialsProvider(own != null ? StaticCredentialsProvider.create(AwsBasicCredentials.create(KEY, KEY))
        : DefaultCredentialsProvider.builder().build());
    this.sqs = b.build();
    this.url = sqs.createQueue(r -> r.queueName(queue).attributes(Map.of(QueueAttributeName.FIFO_QUEUE, "true")))
        .queueUrl();
  }

  @Override
  public String name() {
    return own != null ? "SQS (ElasticMQ)" : "SQS";
  }

  @Override
  public String destination() {
    return queue;
  }

  @Override
  public List<String> relayArgs() {
    return List.of("--broker", "sqs", "--sqs-endpoint", endpoint, "--sqs-region", REGION);
  }

  @Override
  public List<String> inventoryArgs(String member) {
    return List.of("--broker", "sqs", "--sqs-endpoint", endpoint, "--sqs-region", REGION, "--queue", queue);
  }

  /** The processes take their credentials from the AWS SDK's chain: for ElasticMQ, any will do. */
  @Override
  public List<String> jvmOptions() {
    return own != null ? List.of("-Daws.accessKeyId=" + KEY, "-Daws.secretAccessKey=" + KEY) : List.of();
  }

  @Override
  public long held() {
    Map<QueueAttributeName, String> attributes = sqs.getQueueAttributes(r -> r.queueUrl(url)
        .attributeNames(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES)).attributes();
    return Long.parseLong(attributes.getOrDefault(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES, "0"));
  }

  @Override
  public String heldLabel() {
    return "waiting in SQS";
  }

  @Override
  public void close() {
    try {
      sqs.deleteQueue(r -> r.queueUrl(url));
    } finally {
      sqs.close();
      if (own != null) {
        own.close();
      }
    }
  }
}
