package io.txbox.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txbox.Message;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class OutboxRowTextTest {

  @Test
  void timestampsInEveryOffsetFormPostgresPrints() {
    assertThat(OutboxRowText.timestamp("2026-11-24 10:00:00+00")).isEqualTo(Instant.parse("2026-11-24T10:00:00Z"));
    assertThat(OutboxRowText.timestamp("2026-11-24 10:00:00.123456+01"))
        .isEqualTo(Instant.parse("2026-11-24T09:00:00.123456Z"));
    assertThat(OutboxRowText.timestamp("2026-11-24 10:00:00.5+05:30")).isEqualTo(Instant.parse("2026-11-24T04:30:00.5Z"));
    assertThat(OutboxRowText.timestamp("2026-11-24 10:00:00-03")).isEqualTo(Instant.parse("2026-11-24T13:00:00Z"));
  }

  @Test
  void aRowReadsAsItsMessage() {
    Map<String, String> row = new HashMap<>();
    row.put("id", "0193a000-0000-7000-8000-000000000001");
    row.put("key", "k");
    row.put("type", "T");
    row.put("version", "2");
    row.put("destination", "d");
    row.put("payload", "\\x7b7d");
    row.put("content_type", "application/json");
    row.put("headers", "{\"a\": \"b\"}");
    row.put("created_at", "2026-11-24 10:00:00.000001+00");
    Message m = OutboxRowText.message(row::get);
    assertThat(m.payload()).containsExactly('{', '}');
    assertThat(m.headers()).containsEntry("a", "b");
    assertThat(m.version()).isEqualTo(2);
    assertThat(m.availableAt()).isNull();
  }

  @Test
  void aBrokenColumnIsNamed() {
    Map<String, String> row = new HashMap<>();
    row.put("id", "0193a000-0000-7000-8000-000000000001");
    row.put("type", "T");
    row.put("destination", "d");
    row.put("created_at", "2026-11-24 10:00:00+00");
    assertThatThrownBy(() -> OutboxRowText.message(row::get)).hasMessageContaining("payload must not be null");
    row.put("payload", "plain");
    assertThatThrownBy(() -> OutboxRowText.message(row::get)).hasMessageContaining("bytea_output = hex");
  }
}
