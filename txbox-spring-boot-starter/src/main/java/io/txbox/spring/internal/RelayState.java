package io.txbox.spring.internal;

import java.util.Map;

/**
 * This application's relay as the health indicator and the meters see it, whichever source it
 * reads: {@link TableRelayState} or {@link LogicalRelayState}.
 */
public interface RelayState {
  /** Whether the relay's last step failed; it goes on trying. */
  boolean isTroubled();

  /**
   * Adds what it knows to the health details, in the order shown; false when delivery is down: the
   * relay stopped, or the events wait too long.
   */
  boolean report(Map<String, Object> details);
}
