package io.txbox.testkit;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;

/**
 * Marks a test that kills, stops, freezes or fails over real processes (relays, brokers, database
 * servers) to prove what survives: it takes long, and what it proves does not depend on the JDK
 * that runs the test. A build that runs the suite on several JDKs runs these on one of them and
 * leaves them out on the others with {@code -Dtxbox.test.excludedGroups=fault-drill}; a test whose
 * point is a JDK difference is not one.
 *
 * <pre>{@code
 * @FaultDrill
 * @Test
 * void aRelayKilledMidBatchLosesNothing() { ... }
 * }</pre>
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag(FaultDrill.TAG)
public @interface FaultDrill {
  /** The JUnit tag, for surefire's {@code groups} and {@code excludedGroups}. */
  String TAG = "fault-drill";
}
