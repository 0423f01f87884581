package io.txbox.sqs.internal;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.SqsClientBuilder;

/**
 * How txbox reaches SQS when the application gives no client of its own: the SDK's small HTTP
 * client, the region and credentials given or else the SDK's default chains (AWS_REGION,
 * AWS_ACCESS_KEY_ID, profiles, instance roles), an endpoint for SQS-compatible servers.
 */
public record ClientSettings(String endpoint, String region, String accessKeyId, String secretAccessKey) {

  /** No settings given: the SDK's chains for region and credentials, AWS's endpoint. */
  public static final ClientSettings DEFAULTS = new ClientSettings(null, null, null, null);

  public ClientSettings withEndpoint(String endpoint) {
    return new ClientSettings(endpoint, region, accessKeyId, secretAccessKey);
  }

  public ClientSettings withRegion(String region) {
    return new ClientSettings(endpoint, region, accessKeyId, secretAccessKey);
  }

  public ClientSettings withCredentials(String accessKeyId, String secretAccessKey) {
    return new ClientSettings(endpoint, region, accessKeyId, secretAccessKey);
  }

  /** Checks the settings. */
  public void check() {
    if (endpoint != null) {
      try {
        URI uri = new URI(endpoint);
        if (uri.getScheme() == null || uri.getHost() == null) {
          throw new URISyntaxException(endpoint, "needs a scheme and a host");
        }
      } catch (URISyntaxException e) {
        throw new IllegalArgumentException("endpoint must be a URL such as https://sqs.eu-west-1.amazonaws.com"
            + " or http://localhost:9324, was '" + endpoint + "'");
      }
    }
    if ((accessKeyId == null) != (secretAccessKey == null)) {
      throw new IllegalArgumentException("credentials need both the access key id and the secret access key,"
          + " or neither (then the SDK's default chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, profiles, roles)");
    }
  }

  /** A client whose every call gives up after {@code callTimeout}. */
  public SqsClient build(Duration callTimeout) {
    SqsClientBuilder b = SqsClient.builder()
        .httpClientBuilder(UrlConnectionHttpClient.builder().socketTimeout(callTimeout))
        .overrideConfiguration(c -> c.apiCallTimeout(callTimeout));
    if (endpoint != null) {
      b.endpointOverride(URI.create(endpoint));
    }
    if (region != null) {
      b.region(Region.of(region));
    }
    b.credentialsProvider(credentials());
    return b.build();
  }

  private AwsCredentialsProvider credentials() {
    return accessKeyId != null
        ? StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKeyId, secretAccessKey))
        : DefaultCredentialsProvider.builder().build();
  }
}
