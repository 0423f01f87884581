package io.txbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txbox.DeadLetter;
import io.txbox.Message;
import io.txbox.Outbox;
import io.txbox.spi.BucketProgress;
import io.txbox.spi.BucketRead;
import io.txbox.spi.Checkpoint;
import io.txbox.spi.StoredMessage;
import io.txbox.testkit.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PostgresDeadLettersTest {
  private TestDatabase db;
  private PostgresOutboxStore store;
  private DeadLetters deadLetters;
  private final List<Message> sent = new ArrayList<>();

  @BeforeEach
  void deadLetterThreeEvents() throws Exception {
    db = TestDatabase.create();
    store = PostgresOutboxStore.builder(db.dataSource()).schema(db.schema()).buckets(4).build();
    store.migrate();
    deadLetters = store.deadLetters();
    sent.add(event("k", "A", "k1"));
    sent.add(event("k", "B", "k2"));
    sent.add(event("j", "A", "j1"));
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      Outbox.create(store).send(c, sent);
      c.commit();
    }
    // What the relay does when it gives up: dead letters saved with the checkpoint
    store.openSubscription("default");
    store.claimBuckets("default", "relay", 4, Duration.ofSeconds(30));
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

  @AfterEach
  void dropSchema() {
    db.close();
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
    assertThat(store.replay().preview(Scope.ALL.withType("A")).count()).isEqualTo(2);
    assertThat(store.replay().preview(Scope.ALL.withId(sent.get(1).id())).count()).isOne();
    assertThatThrownBy(() -> store.replay().preview(Scope.ALL.withErrorContaining("RecordTooLarge")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("errorContaining selects dead letters");
    assertThatThrownBy(() -> Replay.Request.of(Scope.ALL.withErrorContaining("x"), "alice"))
        .hasMessageContaining("retry the dead letters instead");
  }

  @Test
  void aRetriedEventReentersTheLogWithItsIdAndADiscardedOneIsGoneBothAudited() throws Exception {
    assertThat(deadLetters.discard(Scope.ALL.withType("B"), "alice")).isEqualTo(1);
    assertThat(deadLetters.retry(Scope.ALL.withKey("k"), "bob")).isEqualTo(1);

    assertThat(deadLetters.count(Scope.ALL)).as("j1 is left").isEqualTo(1);
    assertThat(count("SELECT count(*) FROM " + db.schema() + ".txbox_outbox WHERE id = '" + sent.get(0).id() + "'"))
        .as("k1 twice in the log: the original and the retry").isEqualTo(2);
    assertThat(deadLetters.audit(10)).extracting(DeadLetters.AuditEntry::operator,
        DeadLetters.AuditEntry::action, DeadLetters.AuditEntry::scope,
        DeadLetters.AuditEntry::count)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("bob", "retry", "key k", 1L),
            org.assertj.core.groups.Tuple.tuple("alice", "discard", "type B", 1L));
  }

  @Test
  void aRowThatBreaksTheMessageRulesCannotReenterAndStaysDeadLettered() throws Exception {
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("UPDATE " + db.schema() + ".txbox_dead_letter SET type = '' WHERE id = '" + sent.get(2).id() + "'");
    }
    Scope j = Scope.ALL.withKey("j");

    assertThatThrownBy(() -> deadLetters.retry(j, "carol")).hasMessageContaining("txbox_outbox_type_valid");

    assertThat(deadLetters.count(j)).isEqualTo(1);
    assertThat(deadLetters.audit(10)).isEmpty();
  }

  private List<StoredMessage> readAll() {
    List<BucketRead> reads = new ArrayList<>();
    for (int b = 0; b < 4; b++) {
      reads.add(new BucketRead(b, Checkpoint.START, 100));
    }
    return store.read("default", reads);
  }

  private long count(String sql) throws Exception {
    try (Connection c = db.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static Message event(String key, String type, String body) {
    return Message.builder().id(UUID.randomUUID()).type(type).destination("orders").key(key)
        .payload(body.getBytes(StandardCharsets.UTF_8)).build();
  }
}
