package io.txbox.spring;

import java.util.Map;

/**
 * This application's relay as txbox's health indicator and meters see it, whichever source it
 * reads (the table or a replication slot): the starter's bean {@code txboxRelayState}. An
 * application may read it, or give a bean of this type of its own to judge delivery its own way.
 *
 * <pre>{@code
 * @Autowired RelayState relay;
 *
 * Map<String, Object> details = new LinkedHashMap<>();
 * boolean delivering = relay.report(details); // false: stopped, or events wait too long
 * }</pre>
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
