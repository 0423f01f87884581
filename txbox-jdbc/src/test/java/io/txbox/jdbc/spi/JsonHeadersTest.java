package io.txbox.jdbc.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class JsonHeadersTest {

  @Test
  void stringValuesAreUnescaped() {
    assertThat(JsonHeaders.parse("{\"a\": \"x\\\"y\\\\z\", \"b\": \"\\u00fc\\n\\t\", \"traceparent\": \"00-1-2-01\"}"))
        .containsExactly(
            java.util.Map.entry("a", "x\"y\\z"),
            java.util.Map.entry("b", "ü\n\t"),
            java.util.Map.entry("traceparent", "00-1-2-01"));
  }

  @Test
  void otherValuesAreKeptAsJsonText() {
    assertThat(JsonHeaders.parse("{\"n\": 3, \"ok\": true, \"nested\": {\"a\": [1, \"}\"]}, \"z\": null}"))
        .containsEntry("n", "3").containsEntry("ok", "true")
        .containsEntry("nested", "{\"a\": [1, \"}\"]}").containsEntry("z", "null");
  }

  @Test
  void emptyAndMissingAreEmpty() {
    assertThat(JsonHeaders.parse("{}")).isEmpty();
    assertThat(JsonHeaders.parse(null)).isEmpty();
  }

  @Test
  void somethingElseIsRefusedWithTheText() {
    assertThatThrownBy(() -> JsonHeaders.parse("[1, 2]")).hasMessageContaining("not a JSON object");
  }

  @Test
  void writtenHeadersReadBackAsTheyWereWithQuotesControlCharactersAndNonAscii() {
    java.util.Map<String, String> headers = new java.util.LinkedHashMap<>();
    headers.put("a\"b", "x\\y\n\u0001\t");
    headers.put("ü", "\u2028 </script>");
    String json = JsonHeaders.write(headers);
    assertThat(json).doesNotContain("\n").doesNotContain("\u0001");
    assertThat(JsonHeaders.parse(json)).containsExactlyEntriesOf(headers);
    assertThat(JsonHeaders.write(java.util.Map.of())).isEqualTo("{}");
  }
}
