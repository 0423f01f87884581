package io.txbox.cdc.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.Message;
import io.txbox.postgres.OutboxRowText;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Rows in both of pgoutput's formats. The binary one is what PostgreSQL 14 and later send (and
 * what LogicalRelayTest proves end to end); text is what PostgreSQL 13 sends, which no server here
 * runs, so it is proven on the bytes it would send.
 */
class InsertedRowTest {
  private static final UUID ID = UUID.fromString("0193a000-0000-7000-8000-000000000001");
  private static final Instant CREATED = Instant.parse("2026-11-24T10:00:00.000001Z");

  private final List<PgOutput.Column> columns = new ArrayList<>();
  private final List<PgOutput.Value> values = new ArrayList<>();

  @Test
  void aRowSentAsTextReadsAsItsMessage() {
    text("id", 2950, ID.toString());
    text("type", 25, "T");
    text("version", 23, "2");
    text("destination", 25, "d");
    text("payload", 17, "\\x7b7d");
    text("headers", 3802, "{\"a\": \"b\"}");
    text("created_at", 1184, "2026-11-24 10:00:00.000001+00");
    Message m = message();
    assertThat(m.id()).isEqualTo(ID);
    assertThat(m.version()).isEqualTo(2);
    assertThat(m.payload()).containsExactly('{', '}');
    assertThat(m.headers()).containsEntry("a", "b");
    assertThat(m.createdAt()).isEqualTo(CREATED);
  }

  @Test
  void aRowSentInBinaryReadsAsItsMessage() {
    binaryRow();
    Message m = message();
    assertThat(m.id()).isEqualTo(ID);
    assertThat(m.key()).isNull();
    assertThat(m.version()).isEqualTo(7);
    assertThat(m.payload()).containsExactly(0, 255);
    assertThat(m.headers()).containsEntry("a", "b");
    assertThat(m.createdAt()).isEqualTo(CREATED);
    assertThat(m.availableAt()).isNull();
  }

  @Test
  void aColumnOfATypeTheRelayCannotReadInBinaryIsNamed() {
    binaryRow();
    columns.set(columns.size() - 1, new PgOutput.Column("created_at", 1700)); // numeric
    assertThatThrownBy(this::message).hasMessageContaining("event " + ID)
        .hasMessageContaining("created_at has a column type (oid 1700)");
  }

  @Test
  void anInfiniteTimestampIsNotAPointInTime() {
    binaryRow();
    values.set(values.size() - 1, new PgOutput.Value(true, ByteBuffer.allocate(8).putLong(Long.MAX_VALUE).array()));
    assertThatThrownBy(this::message).hasMessageContaining("created_at is infinity");
  }

  @Test
  void jsonbInAnUnknownBinaryVersionIsNamed() {
    binaryRow();
    values.set(4, new PgOutput.Value(true, new byte[] {2, '{', '}'}));
    assertThatThrownBy(this::message).hasMessageContaining("headers is jsonb in a binary version");
  }

  @Test
  void aDeadLetterShowsTextAsTextAndBinaryInHex() {
    binaryRow();
    String shown = new String(new InsertedRow(relation(), insert()).describe(), StandardCharsets.UTF_8);
    assertThat(shown).contains("type=T").contains("payload=\\x00ff").contains("key=null");
  }

  private void binaryRow() {
    binary("id", 2950, ByteBuffer.allocate(16).putLong(ID.getMostSignificantBits()).putLong(ID.getLeastSignificantBits()).array());
    binary("type", 25, "T".getBytes(StandardCharsets.UTF_8));
    binary("key", 25, null);
    binary("version", 23, ByteBuffer.allocate(4).putInt(7).array());
    binary("headers", 3802, "\u0001{\"a\": \"b\"}".getBytes(StandardCharsets.UTF_8));
    binary("destination", 1043, "d".getBytes(StandardCharsets.UTF_8));
    binary("payload", 17, new byte[] {0, (byte) 255});
    long postgresMicros = (CREATED.getEpochSecond() - 946_684_800L) * 1_000_000L + CREATED.getNano() / 1000;
    binary("created_at", 1184, ByteBuffer.allocate(8).putLong(postgresMicros).array());
  }

  private void text(String name, int type, String value) {
    columns.add(new PgOutput.Column(name, type));
    values.add(new PgOutput.Value(false, value.getBytes(StandardCharsets.UTF_8)));
  }

  private void binary(String name, int type, byte[] value) {
    columns.add(new PgOutput.Column(name, type));
    values.add(value == null ? null : new PgOutput.Value(true, value));
  }

  private Message message() {
    return OutboxRowText.message(new InsertedRow(relation(), insert()));
  }

  private PgOutput.Relation relation() {
    return new PgOutput.Relation(1, "s", "txbox_outbox", columns);
  }

  private PgOutput.Insert insert() {
    return new PgOutput.Insert(1, values);
  }
}
