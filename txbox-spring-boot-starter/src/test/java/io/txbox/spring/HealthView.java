package io.txbox.spring;

import java.util.Map;

/** A health indicator's status code ({@code UP}, {@code DOWN}) and details, on either Boot line. */
record HealthView(String status, Map<String, Object> details) {
  boolean isUp() {
    return status.equals("UP");
  }
}
