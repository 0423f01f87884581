package io.txbox.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.txbox.Inbox;
import io.txbox.Message;
import io.txbox.Relay;
import io.txbox.jdbc.Scope;
import io.txbox.jdbc.StoreStatus;
import io.txbox.kafka.KafkaPublisher;
import io.txbox.postgres.PostgresInboxStore;
import io.txbox.postgres.PostgresOutboxStore;
import io.txbox.server.console.Console;
import io.txbox.server.console.ConsoleUsers;
import io.txbox.testkit.JdkNeutral;
import io.txbox.testkit.KafkaBroker;
import io.txbox.testkit.TopicReader;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.Cookie;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebDriverException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The web console in a real headless Chromium (Debian's {@code chromium} and {@code
 * chromium-driver}, which {@code .ci/run} installs) against real dead letters a relay made in
 * PostgreSQL, and the retried event at a real Kafka broker. Skipped where no Chromium exists,
 * except in CI.
 */
@JdkNeutral
class ConsoleBrowserTest {
  private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
  /** Where the screenshots of docs/operations.md come from. */
  private static final Path SCREENSHOTS = Path.of("target", "console-screenshots");

  private final KafkaBroker kafka = KafkaBroker.shared();
  private final String topic = "console-" + UUID.randomUUID();
  private final OutboxSchema schema = new OutboxSchema();
  private final PostgresOutboxStore store = schema.store;
  private final HttpClient http = HttpClient.newHttpClient();
  private final Message poison = event("order-1");
  private Console console;
  private WebDriver browser;

  @BeforeAll
  static void requireChromium() {
    assumeTrue(Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER) || "true".equals(System.getenv("CI")),
        "no Chromium (apt-get install chromium chromium-driver); CI requires it");
  }

  @BeforeEach
  void deadLetterAnEventAndStartTheConsole(@TempDir Path dir) throws Exception {
    try (Relay relay = Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .idleInterval(Duration.ofMillis(20)).build().start()) {
      schema.send(List.of(poison)); // its topic does not exist: the relay gives up on it
      await().atMost(Duration.ofSeconds(30)).until(() -> store.operator().deadLetters().count(Scope.ALL) == 1);
    }
    Path users = dir.resolve("users.properties");
    Files.writeString(users, "alice = operator " + ConsoleUsers.hash("alice-password".toCharArray()) + "\n"
        + "bob = viewer " + ConsoleUsers.hash("bob-password".toCharArray()) + "\n");
    Inbox inbox = Inbox.create(schema.db.dataSource(), PostgresInboxStore.builder().schema(schema.name()).build());
    console = Console.start(new Console.Settings(new InetSocketAddress("127.0.0.1", 0), ConsoleUsers.load(users),
        Duration.ofHours(1)), store.operator(), inbox, () -> KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build());
    browser = chromium();
  }

  @AfterEach
  void stop() {
    if (browser != null) {
      browser.quit();
    }
    if (console != null) {
      console.close();
    }
    schema.close();
  }

  @Test
  void anOperatorSignsInAndRetriesADeadLetterWhichThenReachesTheBroker() throws Exception {
    signIn("alice", "alice-password");
    assertThat(browser.findElement(By.tagName("h1")).getText()).isEqualTo("Overview");
    assertThat(browser.findElement(By.id("chart")).findElements(By.tagName("rect"))).hasSize(61);
    assertThat(browser.findElement(By.id("health")).getText()).isEqualTo("HEALTHY");
    assertThat(browser.getPageSource()).contains("alice (operator)", "/dead-letters?subscription=default");
    screenshot("overview");

    open("/dead-letters");
    assertThat(browser.getPageSource()).contains("1 dead letter(s)", poison.id().toString(), "does not exist");
    screenshot("dead-letters");
    clickAndWaitForTheNextPage(By.className("show"));
    assertThat(browser.findElement(By.id("payload")).getText()).isEqualTo("order-1");

    kafka.createTopic(topic, 1);
    clickAndWaitForTheNextPage(By.xpath("//button[text()='Retry']"));
    assertThat(browser.findElement(By.id("notice")).getText()).contains("is back in the log with its id");
    try (Relay relay = Relay.builder(store.relay(), KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers()).build())
        .idleInterval(Duration.ofMillis(20)).build().start();
        TopicReader reader = TopicReader.open(kafka.bootstrapServers(), topic)) {
      assertThat(reader.readUntil(r -> !r.isEmpty(), Duration.ofSeconds(30))).extracting(TopicReader.Received::id)
          .containsExactly(poison.id().toString());
    }

    open("/replay?subscription=default&to-destination=orders.sandbox&preview=yes");
    // the event's first row, which the relay passed over, and its retried copy: the same id twice
    assertThat(browser.getPageSource()).contains("2 event(s): subscription default, to destination"
        + " orders.sandbox", "first: #1 OrderPlaced key order-1", "last: #2 OrderPlaced key order-1");
    screenshot("replay");
    open("/audit");
    assertThat(browser.findElement(By.tagName("table")).getText())
        .contains("alice retry outbox subscription default, id " + poison.id() + " 1")
        .as("a preview is a read: no audit row").doesNotContain("orders.sandbox");
    screenshot("audit");
  }

  @Test
  void aViewerSeesTheDeadLettersButCannotRetryThem() throws Exception {
    signIn("bob", "bob-password");
    open("/dead-letters");
    assertThat(browser.getPageSource()).contains(poison.id().toString()).doesNotContain(">Retry<");

    String csrf = browser.findElement(By.name("csrf")).getAttribute("value"); // the sign-out form's
    HttpResponse<String> forced = post("/dead-letters/retry", sessionCookie(), csrf);
    assertThat(forced.statusCode()).isEqualTo(403);
    assertThat(forced.body()).contains("bob is a viewer");
    assertThat(store.operator().deadLetters().count(Scope.ALL)).isEqualTo(1);
  }

  @Test
  void theTransactionHoldingDeliveryBackShowsItsPidToAnyoneAndItsQueryToOperatorsOnly() throws Exception {
    try (java.sql.Connection open = schema.db.dataSource().getConnection()) {
      open.setAutoCommit(false);
      int pid;
      try (java.sql.Statement s = open.createStatement();
          java.sql.ResultSet rs = s.executeQuery("SELECT pg_backend_pid(), pg_current_xact_id(), 'card 4111-1111'")) {
        rs.next();
        pid = rs.getInt(1);
      }
      // Shown once open a second (StoreStatus.OPEN_TRANSACTION_SHOWN_AFTER): shorter is ordinary traffic.
      await().atMost(Duration.ofSeconds(10)).until(() -> store.relay().oldestOpenTransaction()
          .filter(t -> t.pid() == pid && t.age().compareTo(StoreStatus.OPEN_TRANSACTION_SHOWN_AFTER) >= 0).isPresent());
      signIn("bob", "bob-password");
      String viewer = browser.getPageSource();
      assertThat(viewer).contains("<td>" + pid + "</td>", "idle in transaction", "shown to operators only")
          .doesNotContain("4111-1111");
      assertThat(viewer).as("why the newest dead letter was given up on").contains("does not exist");
      browser.manage().deleteAllCookies();
      signIn("alice", "alice-password");
      assertThat(browser.findElement(By.id("open-transaction-query")).getText()).contains("card 4111-1111");
      open.rollback();
    }
  }

  @Test
  void aRequestWithoutCredentialsOrWithoutTheCsrfTokenIsRefused() throws Exception {
    HttpResponse<String> page = http.send(HttpRequest.newBuilder(url("/dead-letters")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(page.statusCode()).isEqualTo(303);
    assertThat(page.headers().firstValue("Location")).contains("/login");
    assertThat(post("/dead-letters/retry", null, null).statusCode()).isEqualTo(401);

    signIn("alice", "wrong-password");
    assertThat(browser.findElement(By.id("error")).getText()).isEqualTo("wrong user or password");
    signIn("alice", "alice-password");
    HttpResponse<String> forged = post("/dead-letters/retry", sessionCookie(), "not-the-token");
    assertThat(forged.statusCode()).isEqualTo(403);
    assertThat(forged.body()).contains("CSRF");
    assertThat(store.operator().deadLetters().count(Scope.ALL)).as("nothing changed").isEqualTo(1);
  }

  @Test
  void textThatWouldReorderOrControlTheDisplayShowsAsVisibleEscapes() throws Exception {
    schema.deadLetter("key\u001b[2J", "Invoice\u202egnp.exe", "refused\u2066 by the broker");

    signIn("bob", "bob-password");
    open("/dead-letters?type=Invoice%E2%80%AEgnp.exe");

    String shown = browser.findElement(By.tagName("table")).getText();
    assertThat(shown).contains("Invoice\\u202egnp.exe", "key\\u001b[2J", "refused\\u2066 by the broker")
        .doesNotContain("\u202e", "\u2066", "\u001b");
    assertThat(browser.findElement(By.tagName("td")).getCssValue("unicode-bidi")).isEqualTo("isolate");
  }

  @Test
  void withoutAUsersFileItListensOnLoopbackOnlyAndChangesNothing() throws Exception {
    assertThatThrownBy(() -> new Console.Settings(new InetSocketAddress("0.0.0.0", 0), null, Duration.ofHours(1)))
        .hasMessageContaining("refusing to listen on 0.0.0.0 without authentication");
    Inbox inbox = Inbox.create(schema.db.dataSource(), PostgresInboxStore.builder().schema(schema.name()).build());
    try (Console anonymous = Console.start(new Console.Settings(new InetSocketAddress("127.0.0.1", 0), null,
        Duration.ofHours(1)), store.operator(), inbox, null)) {
      URI base = URI.create("http://127.0.0.1:" + anonymous.address().getPort());
      browser.get(base.resolve("/dead-letters").toString());
      assertThat(browser.getPageSource()).contains("anonymous viewer", poison.id().toString()).doesNotContain(">Retry<");
      HttpResponse<String> refused = http.send(HttpRequest.newBuilder(base.resolve("/dead-letters/retry"))
          .header("Content-Type", "application/x-www-form-urlencoded")
          .POST(HttpRequest.BodyPublishers.ofString("subscription=default&id=" + poison.id())).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(refused.statusCode()).isEqualTo(403);
    }
  }

  private void signIn(String user, String password) {
    open("/login");
    browser.findElement(By.id("username")).sendKeys(user);
    browser.findElement(By.id("password")).sendKeys(password);
    clickAndWaitForTheNextPage(By.id("sign-in"));
  }

  /**
   * Clicks and returns once the browser shows the answer: a click does not wait for the page it
   * leads to, and an element found before that page arrived goes stale under our feet.
   */
  private void clickAndWaitForTheNextPage(By target) {
    WebElement page = browser.findElement(By.tagName("html"));
    browser.findElement(target).click();
    new WebDriverWait(browser, Duration.ofSeconds(30)).until(d -> gone(page));
  }

  /**
   * Whether {@code element}'s page was replaced. Chromium says so with a stale element, or, when
   * asked in the middle of the replacement, with an inspector error that the node "does not belong
   * to the document" (a plain WebDriverException, which failed a CI run on Temurin 25).
   */
  private static boolean gone(WebElement element) {
    try {
      element.isEnabled();
      return false;
    } catch (StaleElementReferenceException e) {
      return true;
    } catch (WebDriverException e) {
      if (String.valueOf(e.getMessage()).contains("does not belong to the document")) {
        return true;
      }
      throw e;
    }
  }

  private void open(String path) {
    browser.get(url(path).toString());
  }

  private URI url(String path) {
    return URI.create("http://127.0.0.1:" + console.address().getPort() + path);
  }

  /** The session cookie, once the browser has the sign-in's answer (a click does not wait for it). */
  private String sessionCookie() {
    Cookie session = await().atMost(Duration.ofSeconds(30))
        .until(() -> browser.manage().getCookieNamed("txbox_session"), cookie -> cookie != null);
    return "txbox_session=" + session.getValue();
  }

  private HttpResponse<String> post(String path, String cookie, String csrf) throws Exception {
    String form = "subscription=default&id=" + poison.id() + (csrf == null ? "" : "&csrf=" + csrf);
    HttpRequest.Builder request = HttpRequest.newBuilder(url(path))
        .header("Content-Type", "application/x-www-form-urlencoded").POST(HttpRequest.BodyPublishers.ofString(form));
    if (cookie != null) {
      request.header("Cookie", cookie);
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private void screenshot(String name) throws IOException {
    Files.createDirectories(SCREENSHOTS);
    File shot = ((ChromeDriver) browser).getScreenshotAs(OutputType.FILE);
    Files.copy(shot.toPath(), SCREENSHOTS.resolve(name + ".png"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
  }

  private static WebDriver chromium() {
    ChromeOptions options = new ChromeOptions().setBinary(CHROMIUM.toFile())
        .addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900");
    ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile())
        .usingAnyFreePort().build();
    ChromeDriver driver = new ChromeDriver(service, options);
    driver.manage().timeouts().implicitlyWait(Duration.ofSeconds(5));
    return driver;
  }

  private Message event(String key) {
    return Message.builder().id(UUID.randomUUID()).type("OrderPlaced").destination(topic).key(key)
        .payload(key.getBytes(StandardCharsets.UTF_8)).build();
  }
}
