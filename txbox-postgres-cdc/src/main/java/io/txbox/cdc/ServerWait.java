package io.txbox.cdc;

import java.time.Duration;
import java.time.Instant;

/**
 * A call to the server a {@link LogicalRelay} is waiting for: creating its slot again, starting
 * the stream, writing its checkpoint. Such a call does not return while, for example, the server
 * waits for a transaction that stays open or for a synchronous standby that is gone; the relay
 * then says what it waits for rather than nothing.
 *
 * <pre>{@code
 * relay.stalled().ifPresent(w -> log.warn("the relay waits {} for {}", w.age(Instant.now()), w.what()));
 * }</pre>
 *
 * @param what what the relay waits for, with what usually causes such a wait, in words for people
 * @param since when the call began
 */
public record ServerWait(String what, Instant since) {

  /** How long the call has waited at {@code now}; never negative. */
  public Duration age(Instant now) {
    Duration age = Duration.between(since, now);
    return age.isNegative() ? Duration.ZERO : age;
  }
}
