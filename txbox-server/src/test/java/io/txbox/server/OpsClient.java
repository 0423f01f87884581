package io.txbox.server;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads a relay's metrics and health endpoint, at the port its log names. */
final class OpsClient {
  private static final Pattern ENDPOINT = Pattern.compile("metrics and health at http://[^:]+:(\\d+)/metrics");
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final int port;

  private OpsClient(int port) {
    this.port = port;
  }

  /** The endpoint of the relay that writes {@code log}, once the log names it. */
  static OpsClient of(RelayProcesses relays, int index) {
    AtomicInteger port = new AtomicInteger();
    await().atMost(Duration.ofSeconds(60)).until(() -> {
      Matcher m = ENDPOINT.matcher(relays.log(index));
      if (m.find()) {
        port.set(Integer.parseInt(m.group(1)));
      }
      return port.get() > 0;
    });
    return new OpsClient(port.get());
  }

  /** The port the relay listens on. */
  int port() {
    return port;
  }

  record Answer(int status, String body) {}

  /**
   * {@code /health/ready} once it says ready, as a kubelet sees it: asked again, as the kubelet
   * asks every period, while the verdict from before the relay was under way still stands.
   */
  Answer ready() {
    Answer[] last = new Answer[1];
    await().atMost(java.time.Duration.ofSeconds(30)).untilAsserted(() -> {
      last[0] = get("/health/ready");
      org.assertj.core.api.Assertions.assertThat(last[0].status()).as(last[0].body()).isEqualTo(200);
    });
    return last[0];
  }

  Answer get(String path) throws IOException, InterruptedException {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    return new Answer(r.statusCode(), r.body());
  }
}
