package io.txbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.OutboxStore;
import io.txbox.spi.StoredMessage;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What every store's operator half ({@link OperatorStore}) must do with dead letters and replays:
 * select them by scope, show, retry with their ids and discard them, audited, and refuse what
 * cannot re-enter the log; and what its status says of relays the broker fenced. A store's test
 * extends this class; the dead letters are made as the relay makes them, through the
 * {@code saveProgress} of the store's relay part.
 *
 * <p>It lives in txbox-jdbc's test jar, beside {@link OperatorStore}: the testkit cannot depend on
 * txbox-jdbc, whose own tests use the testkit.
 *
 * <pre>{@code
 * class MariaDbDeadLettersTest extends OperatorStoreContract {
 *   protected JdbcOutboxStore freshStore() { ... }   // 4 buckets
 *   protected DataSource dataSource() { ... }
 *   protected long outboxRowsWithId(UUID id) { ... }
 *   protected void emptyTheTypeOfDeadLetter(UUID id) { ... }
 * }
 * }</pre>
 */
public abstract class OperatorStoreContract {
  private static final int BUCKETS = 4;
  private OutboxStore store;
  private OperatorStore operator;
  private DeadLetters deadLetters;
  private final List<Message> sent = new ArrayList<>();

  /** A new, empty store of {@value #BUCKETS} buckets, its tables created. */
  protected abstract JdbcOutboxStore freshStore() throws Exception;

  /** Where the store's tables are: the contract appends through the store, in a transaction of its own. */
  protected abstract DataSource dataSource();

  /** How many events with this id the outbox table holds. */
  protected abstract long outboxRowsWithId(UUID id) throws Exception;

  /** Writes an empty type into the dead letter of {@code id}, as a hand-edited row might hold. */
  protected abstract void emptyTheTypeOfDeadLetter(UUID id) throws Exception;

  @BeforeEach
  void deadLetterThreeEvents() throws Exception {
    JdbcOutboxStore whole = freshStore();
    operator = whole.operator();
    store = whole.relay();
    deadLetters = operator.deadLetters();
    sent.add(event("k", "A", "k1"));
    sent.add(event("k", "B", "k2"));
    sent.add(event("j", "A", "j1"));
    try (Connection c = dataSource().getConnection()) {
      c.setAutoCommit(false);
      store.append(c, sent);
      c.commit();
    }
    // What the relay does when it gives up: dead letters saved with the checkpoint
    store.openSubscription("default");
    store.claimBuckets("default", "relay", BUCKETS, Duration.ofSeconds(30));
    List<StoredMessage> rows = await().atMost(Duration.ofSeconds(30)).until(this::readAll, r -> r.size() == 3);
    List<DeadLetter> letters = new ArrayList<>();
    List<BucketProgress> progress = new ArrayList<>();
    for (StoredMessage row : rows) {
      letters.add(new DeadLetter("default", row.bucket(), row.checkpoint(), row.message(),
          "org.apache.kafka.common.errors.RecordTooLargeException: " + row.message().type(), 10));
      progress.add(new BucketProgress(row.bucket(), row.checkpoint(), 0, null, null));
    }
    store.saveProgress("default", "relay", progress, letters);
  }

  @Test
  void aRelayFencedThreeTimesLatelyIsNamedAndDegradesTheStatusWhileOneFencedOnceOnlyShows() {
    store.heartbeat("default", "relay", Duration.ofSeconds(30));
    store.heartbeat("default", "other", Duration.ofSeconds(30));
    store.recordFence("default", "other");
    assertThat(fencedProblems(operator.status(100))).as("one fence is a take-over, not a pattern").isEmpty();
    for (int i = 0; i < StoreStatus.FENCED_REPEATEDLY; i++) {
      store.recordFence("default", "relay");
    }
    store.recordFence("default", "gone"); // an instance without a row: nothing to count on
    StoreStatus status = operator.status(100);
    assertThat(status.fencedRelays()).extracting(StoreStatus.FencedRelay::instance, StoreStatus.FencedRelay::fences)
        .containsExactly(tuple("relay", StoreStatus.FENCED_REPEATEDLY), tuple("other", 1));
    assertThat(status.fencedRelays().get(0).lastFencedAt())
        .isBetween(Instant.now().minusSeconds(60), Instant.now().plusSeconds(60));
    assertThat(fencedProblems(status)).singleElement().asString()
        .startsWith("subscription default: 1 relay(s) fenced 3 or more times, the last within 15 minutes");
  }

  private static List<String> fencedProblems(StoreStatus status) {
    return status.problems(Duration.ofDays(1)).stream().filter(p -> p.contains("fenced")).toList();
  }

  @Test
  void aScopeSelectsByTypeKeyErrorPositionAndIdAndShowGivesThePayload() {
    assertThat(deadLetters.count(Scope.ALL)).isEqualTo(3);
    long position = deadLetters.list(Scope.ALL.withKey("j"), 10).get(0).position();
    assertThat(deadLetters.list(Scope.ALL.withPositions(position, position), 10))
        .extracting(DeadLetters.Entry::id).containsExactly(sent.get(2).id());
    assertThat(deadLetters.count(Scope.ALL.withId(sent.get(1).id()))).isOne();
    assertThat(deadLetters.count(Scope.ALL.withType("A"))).isEqualTo(2);
    assertThat(deadLetters.count(Scope.ALL.withKey("k").withErrorContaining("RecordTooLarge"))).isEqualTo(2);
    assertThat(deadLetters.count(Scope.ALL.withSubscription("other"))).isZero();
    assertThat(deadLetters.list(Scope.ALL.withKey("k"), 10))
        .extracting(DeadLetters.Entry::id).containsExactlyInAnyOrder(sent.get(0).id(), sent.get(1).id());

    DeadLetters.Details shown = deadLetters.show("default", sent.get(1).id()).orElseThrow();
    assertThat(new String(shown.payload(), StandardCharsets.UTF_8)).isEqualTo("k2");
    assertThat(shown.entry().attempts()).isEqualTo(10);
  }

  @Test
  void theSameScopeTypeSelectsTheLogsEventsForAReplayButNotByError() {
    assertThat(operator.replay().preview(Scope.ALL.withType("A")).count()).isEqualTo(2);
    assertThat(operator.replay().preview(Scope.ALL.withId(sent.get(1).id())).count()).isOne();
    assertThatThrownBy(() -> operator.replay().preview(Scope.ALL.withErrorContaining("RecordTooLarge")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("errorContaining selects dead letters");
    assertThatThrownBy(() -> Replay.Request.of(Scope.ALL.withErrorContaining("x"), "alice"))
        .hasMessageContaining("retry the dead letters instead");
  }

  @Test
  void aRetriedEventReentersTheLogWithItsIdAndADiscardedOneIsGoneBothAudited() throws Exception {
    assertThat(deadLetters.discard(Scope.ALL.withType("B"), "alice")).isEqualTo(1);
    assertThat(deadLetters.retry(Scope.ALL.withKey("k"), "bob")).isEqualTo(1);

    assertThat(deadLetters.count(Scope.ALL)).as("j1 is left").isEqualTo(1);
    assertThat(outboxRowsWithId(sent.get(0).id()))
        .as("k1 twice in the log: the original and the retry").isEqualTo(2);
    assertThat(deadLetters.audit(10)).extracting(DeadLetters.AuditEntry::operator,
        DeadLetters.AuditEntry::action, DeadLetters.AuditEntry::scope,
        DeadLetters.AuditEntry::count)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("bob", "retry", "key k", 1L),
            org.assertj.core.groups.Tuple.tuple("alice", "discard", "type B", 1L));
  }

  @Test
  void severalLettersRetriedAtOnceReenterTheLogInTheirOrder() throws Exception {
    assertThat(deadLetters.retry(Scope.ALL, "carol")).isEqualTo(3);

    assertThat(deadLetters.count(Scope.ALL)).isZero();
    for (Message m : sent) {
      assertThat(outboxRowsWithId(m.id())).as("the original and the retry of " + m.key()).isEqualTo(2);
    }
  }

  @Test
  void aRowThatBreaksTheMessageRulesCannotReenterAndStaysDeadLettered() throws Exception {
    emptyTheTypeOfDeadLetter(sent.get(2).id());
    Scope j = Scope.ALL.withKey("j");

    assertThatThrownBy(() -> deadLetters.retry(j, "carol")).hasMessageContaining("outbox_type_valid");

    assertThat(deadLetters.count(j)).isEqualTo(1);
    assertThat(deadLetters.audit(10)).isEmpty();
  }

  private List<StoredMessage> readAll() {
    List<BucketRead> reads = new ArrayList<>();
    for (int b = 0; b < BUCKETS; b++) {
      reads.add(new BucketRead(b, Checkpoint.START, 100));
    }
    return store.read("default", reads);
  }

  private static Message event(String key, String type, String body) {
    return Message.builder().id(UUID.randomUUID()).type(type).destination("orders").key(key)
        .payload(body.getBytes(StandardCharsets.UTF_8)).build();
  }
}
