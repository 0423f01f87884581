package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txbox.server.console.ConsoleUsers;
import io.txbox.testkit.LocalPorts;
import io.txbox.testkit.TestDatabase;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A running {@code txbox console}, as its own process, probed over real sockets as an attacker
 * would: slow clients, password guessing, forged log lines, foreign origins and hosts, NUL bytes,
 * huge payloads, a broken users file.
 */
class ConsoleHostileClientsTest {
  private static final String PASSWORD = "bob-password-1";
  @TempDir Path dir;
  private final OutboxSchema schema = new OutboxSchema();
  private final RelayProcesses processes = new RelayProcesses();
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private Path users;
  private int port;

  private Process console;
  private int consoles;

  @BeforeEach
  void startTheConsole() throws Exception {
    users = dir.resolve("users.properties");
    Files.writeString(users, "bob = viewer " + ConsoleUsers.hash(PASSWORD.toCharArray()) + "\n");
    port = LocalPorts.free();
    startConsole();
  }

  private void startConsole() throws Exception {
    int index = consoles++;
    console = processes.startCommand(dir, "console", List.of(), Map.of(), List.of("--jdbc-url", TestDatabase.jdbcUrl(),
        "--schema", schema.name(), "--listen", "127.0.0.1:" + port, "--users", users.toString(),
        "--request-timeout", "3s", "--trusted-proxy", "127.0.0.1")); // the test's requests play a reverse proxy's
    await().atMost(Duration.ofSeconds(60)).until(() -> processes.log(index).contains("txbox console on"));
  }

  @AfterEach
  void stop() {
    processes.close();
    schema.close();
  }

  @Test
  void pagesAreServedWhileHundredsOfClientsTrickleTheirRequests() throws Exception {
    // Before, the console ran on the JDK's HttpServer, which gives a connection a thread before
    // reading it: 200 trickling sockets held all 32 threads and pages waited for --request-timeout.
    ScheduledExecutorService attacker = Executors.newSingleThreadScheduledExecutor();
    SlowLoris loris = new SlowLoris(200);
    Socket cutOff = new Socket("127.0.0.1", port);
    try {
      attacker.scheduleAtFixedRate(loris::trickle, 0, 200, TimeUnit.MILLISECONDS);
      cutOff.getOutputStream().write("GET /login HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));

      for (int i = 0; i < 20; i++) {
        HttpResponse<String> page = http.send(HttpRequest.newBuilder(url("/login")).timeout(Duration.ofSeconds(2))
            .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(page.statusCode()).as("page %d among 200 trickling sockets", i).isEqualTo(200);
      }
      cutOff.setSoTimeout(10_000);
      assertThat(drain(cutOff.getInputStream())).as("cut off after --request-timeout, answered nothing").isEmpty();
    } finally {
      attacker.shutdownNow();
      attacker.awaitTermination(10, TimeUnit.SECONDS);
      loris.close();
      cutOff.close();
    }
  }

  /**
   * {@code count} sockets sending a request one header byte at each {@link #trickle}, as a
   * slow-loris client does, with a new one for each the console cuts off.
   */
  private final class SlowLoris {
    private final int count;
    private final List<Socket> sockets = new ArrayList<>();

    SlowLoris(int count) {
      this.count = count;
    }

    /** One turn: tops the sockets up to {@code count}, then sends each one more byte. */
    void trickle() {
      try {
        while (sockets.size() < count) {
          Socket s = new Socket("127.0.0.1", port);
          s.getOutputStream().write("GET /login HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
          sockets.add(s);
        }
      } catch (java.io.IOException e) {
        return; // the console is gone, or the test is over
      }
      for (java.util.Iterator<Socket> it = sockets.iterator(); it.hasNext(); ) {
        Socket s = it.next();
        try {
          s.getOutputStream().write('X');
        } catch (java.io.IOException e) {
          closeQuietly(s); // cut off by the console: replaced on the next turn
          it.remove();
        }
      }
    }

    void close() {
      sockets.forEach(SlowLoris::closeQuietly);
    }

    private static void closeQuietly(Socket s) {
      try {
        s.close();
      } catch (java.io.IOException e) {
        // closing anyway
      }
    }
  }

  @Test
  void afterFiveWrongPasswordsEvenTheRightOneWaitsAndTheLogNamesTheAddress() throws Exception {
    for (int i = 0; i < 5; i++) {
      assertThat(signIn("bob", "guess-" + i).statusCode()).isEqualTo(401);
    }

    HttpResponse<String> refused = signIn("bob", PASSWORD);

    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(refused.body()).contains("too many wrong passwords");
    assertThat(processes.log(0)).contains("failed sign-in for user 'bob' from 127.0.0.1");
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(500))
        .until(() -> signIn("bob", PASSWORD).statusCode() == 303);
  }

  @Test
  void guessesFromOtherClientsBehindTheProxyNeverKeepTheUserOut() throws Exception {
    String desk = "198.51.100.7";
    assertThat(signIn("bob", PASSWORD, desk).statusCode()).isEqualTo(303);
    for (int i = 0; i < 5; i++) {
      assertThat(signIn("bob", "guess-" + i, "203.0.113.9").statusCode()).isEqualTo(401);
    }
    assertThat(signIn("bob", "guess-5", "203.0.113.9").statusCode()).as("the guesser waits").isEqualTo(429);
    assertThat(processes.log(0)).contains("failed sign-in for user 'bob' from 203.0.113.9");

    assertThat(signIn("bob", PASSWORD, desk).statusCode()).as("bob at his desk").isEqualTo(303);
    assertThat(signIn("bob", PASSWORD, "198.51.100.99").statusCode()).as("bob somewhere new").isEqualTo(303);
    assertThat(signIn("bob", PASSWORD, "203.0.113.9, 198.51.100.7").statusCode())
        .as("a forged first entry is not who asks: the proxy's entry is").isEqualTo(303);
  }

  @Test
  void guessesFromManyAddressesAfterARestartNeverKeepOutABrowserThatSignedInBefore() throws Exception {
    HttpResponse<String> atDesk = signIn("bob", PASSWORD, "198.51.100.7", null);
    String device = atDesk.headers().allValues("Set-Cookie").stream().filter(c -> c.startsWith("txbox_device="))
        .findFirst().orElseThrow().split(";")[0];
    console.destroy(); // what bob proved must outlive the console's memory
    console.waitFor(30, TimeUnit.SECONDS);
    startConsole();
    for (int address = 1; address <= 5; address++) { // no account needed: wrong passwords for bob from five places
      for (int i = 0; i < 4; i++) {
        assertThat(signIn("bob", "guess-" + i, "203.0.113." + address, null).statusCode()).isEqualTo(401);
      }
    }
    assertThat(signIn("bob", PASSWORD, "198.51.100.20", null).statusCode())
        .as("a new place in a new browser waits: what the threat model says is left").isEqualTo(429);
    String forged = device.substring(0, device.length() - 2) + (device.endsWith("AA") ? "BB" : "AA");
    assertThat(signIn("bob", PASSWORD, "198.51.100.22", forged).statusCode())
        .as("a forged device cookie proves nothing").isEqualTo(429);

    assertThat(signIn("bob", PASSWORD, "198.51.100.21", device).statusCode())
        .as("bob's browser, from a new place, after a restart").isEqualTo(303);
  }

  @Test
  void aUserNameCannotForgeALogLine() throws Exception {
    signIn("mallory\nconsole: mallory signed in as OPERATOR", "x");

    assertThat(processes.log(0).lines().filter(line -> line.contains("signed in as OPERATOR")))
        .as(processes.log(0)).allMatch(line -> line.contains("failed sign-in for user 'mallory\\u000aconsole:"));
  }

  @Test
  void aFormFromAnotherSiteOrARequestForAnotherHostIsRefused() throws Exception {
    HttpResponse<String> foreign = http.send(form("/login", "username=bob&password=" + PASSWORD)
        .header("Origin", "http://evil.example").build(), HttpResponse.BodyHandlers.ofString());
    assertThat(foreign.statusCode()).isEqualTo(403);
    assertThat(foreign.headers().firstValue("Set-Cookie")).as("no session").isEmpty();

    try (Socket s = new Socket("127.0.0.1", port)) { // a DNS-rebound name: the HTTP client will not set Host itself
      s.getOutputStream().write("GET /login HTTP/1.1\r\nHost: rebound.evil.example:80\r\nConnection: close\r\n\r\n"
          .getBytes(StandardCharsets.US_ASCII));
      String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(answer).startsWith("HTTP/1.1 421").contains("--allowed-host rebound.evil.example");
    }
  }

  @Test
  void aNulInAFilterIsABadRequestNamingTheParameter() throws Exception {
    String cookie = cookie(signIn("bob", PASSWORD));

    HttpResponse<String> page = http.send(HttpRequest.newBuilder(url("/dead-letters?key=a%00b")).header("Cookie", cookie)
        .build(), HttpResponse.BodyHandlers.ofString());

    assertThat(page.statusCode()).isEqualTo(400);
    assertThat(page.body()).contains("parameter &#39;key&#39; holds a NUL character");
  }

  @Test
  void aBurstOfRequestsForAHugeDeadLetterWhoseClientsLeftAtOnceDoesNotTakeTheConsoleDown() throws Exception {
    byte[] payload = new byte[5 * 1024 * 1024];
    Arrays.fill(payload, (byte) 'x');
    UUID id = schema.deadLetter("k", "Huge", "too big", payload);
    String cookie = cookie(signIn("bob", PASSWORD));
    byte[] request = ("GET /dead-letters/show?subscription=default&id=" + id + " HTTP/1.1\r\nHost: 127.0.0.1:" + port
        + "\r\nCookie: " + cookie + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
    for (int i = 0; i < 150; i++) { // sent and gone: before, pages were built for all of them, one after another
      try (Socket s = new Socket("127.0.0.1", port)) {
        s.getOutputStream().write(request);
      }
    }

    // As a browser would: a request that meets the tail of the burst in a full queue is answered
    // 503 with Retry-After at once, and asked again after it; what must not happen is a console
    // still building pages for the gone clients when the user's asks come.
    long start = System.nanoTime();
    int busy = 0;
    HttpResponse<String> login = getLogin();
    while (login.statusCode() == 503 && busy++ < 3) {
      assertThat(login.headers().firstValue("Retry-After")).contains("1");
      Thread.sleep(1000);
      login = getLogin();
    }
    Duration took = Duration.ofNanos(System.nanoTime() - start);

    assertThat(login.statusCode()).isEqualTo(200);
    assertThat(took).as("the sign-in page after the burst, within the console's request timeout")
        .isLessThan(Duration.ofSeconds(3));
    System.out.printf("GET /login after 150 abandoned requests for a 5 MiB dead letter: %d ms, %d busy answer(s)"
        + " first%n", took.toMillis(), busy);
  }

  private HttpResponse<String> getLogin() throws Exception {
    return http.send(HttpRequest.newBuilder(url("/login")).timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aHugePayloadIsShownCutShortWithTheCommandThatPrintsItAll() throws Exception {
    byte[] payload = new byte[5 * 1024 * 1024];
    Arrays.fill(payload, (byte) 'x');
    UUID id = schema.deadLetter("k", "Huge", "too big", payload);
    String cookie = cookie(signIn("bob", PASSWORD));

    List<HttpResponse<String>> pages = new ArrayList<>();
    for (int i = 0; i < 8; i++) { // each page once held the payload thrice over; eight exhausted the heap
      pages.add(http.send(HttpRequest.newBuilder(url("/dead-letters/show?subscription=default&id=" + id))
          .header("Cookie", cookie).build(), HttpResponse.BodyHandlers.ofString()));
    }

    assertThat(pages).allSatisfy(page -> {
      assertThat(page.statusCode()).isEqualTo(200);
      assertThat(page.body().length()).isLessThan(200_000);
      assertThat(page.body()).contains("more characters not shown: txbox dead-letters show --subscription default --id "
          + id);
    });
  }

  @Test
  void aUsersFileWithAMalformedHashIsRefusedAtStartNamingTheUser() throws Exception {
    Files.writeString(users, "carol = operator pbkdf2-sha256:999999999999:c2FsdA==:bm90IGEgaGFzaA==\n");

    Process console = processes.startCommand(dir, "console", List.of(), Map.of(), List.of("--jdbc-url",
        TestDatabase.jdbcUrl(), "--schema", schema.name(), "--listen", "127.0.0.1:0", "--users", users.toString()));

    assertThat(console.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(console.exitValue()).isEqualTo(2);
    assertThat(processes.log(1)).contains("invalid --users: user 'carol'", "the iterations are not a number");
  }

  private URI url(String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }

  private HttpRequest.Builder form(String path, String body) {
    return HttpRequest.newBuilder(url(path)).header("Content-Type", "application/x-www-form-urlencoded")
        .POST(HttpRequest.BodyPublishers.ofString(body));
  }

  private HttpResponse<String> signIn(String user, String password) throws Exception {
    return http.send(form("/login", "username=" + java.net.URLEncoder.encode(user, StandardCharsets.UTF_8)
        + "&password=" + password).build(), HttpResponse.BodyHandlers.ofString());
  }

  /** A sign-in through the reverse proxy, for the client it names. */
  private HttpResponse<String> signIn(String user, String password, String forwardedFor) throws Exception {
    return signIn(user, password, forwardedFor, null);
  }

  /** A sign-in through the reverse proxy, for the client it names, with its browser's cookie if not null. */
  private HttpResponse<String> signIn(String user, String password, String forwardedFor, String cookie)
      throws Exception {
    HttpRequest.Builder request = form("/login", "username=" + java.net.URLEncoder.encode(user, StandardCharsets.UTF_8)
        + "&password=" + password).header("X-Forwarded-For", forwardedFor);
    if (cookie != null) {
      request.header("Cookie", cookie);
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String cookie(HttpResponse<String> signedIn) {
    assertThat(signedIn.statusCode()).isEqualTo(303);
    return signedIn.headers().firstValue("Set-Cookie").orElseThrow().split(";")[0];
  }

  private static byte[] drain(InputStream in) throws Exception {
    return in.readAllBytes();
  }
}
