package io.txbox.spring.internal;

import io.txbox.spring.RelayState;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * What the {@code txbox} health indicator reports, in no Spring Boot type, so that the Boot 3 and
 * Boot 4 indicators ({@link Boot3HealthIndicator}, {@link Boot4HealthIndicator}) say the same.
 *
 * <p>The verdict is the relay's ({@link TableRelayState}, {@link LogicalRelayState}). The {@code
 * troubled} detail lists the background loops whose last step failed.
 */
public final class TxboxHealthCheck {
  /** The verdict and the details shown beside it, in the order they were added. */
  public record Result(boolean up, Map<String, Object> details) {}

  private final RelayState relay;
  private final Supplier<List<String>> troubledLoops;

  public TxboxHealthCheck(RelayState relay, Supplier<List<String>> troubledLoops) {
    this.relay = relay;
    this.troubledLoops = troubledLoops;
  }

  public Result check() {
    Map<String, Object> details = new LinkedHashMap<>();
    // A failing loop goes on trying; it shows here, and DOWN comes from its effect: a stopped
    // relay or events that wait too long.
    details.put("troubled", troubledLoops.get());
    boolean up = relay.report(details);
    return new Result(up, details);
  }
}
