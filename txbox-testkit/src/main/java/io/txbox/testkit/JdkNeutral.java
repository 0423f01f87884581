package io.txbox.testkit;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.Tag;

/**
 * Marks a test whose subject is a program outside the JVM (Prometheus evaluating the alert rules,
 * Chromium driving the console, PgBouncer between txbox and PostgreSQL, the demo's processes):
 * what it proves does not change with the JDK that runs the test. A build that runs the suite on
 * several JDKs runs these once, as it runs the {@link FaultDrill}s; a test that exercises a client
 * library, reflection, the garbage collector or an agent is not one, since that is what a second
 * JDK is for.
 *
 * <pre>{@code
 * @JdkNeutral
 * class RelayAlertsTest { ... }
 * }</pre>
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Tag(JdkNeutral.TAG)
public @interface JdkNeutral {
  /** The JUnit tag, for surefire's {@code groups} and {@code excludedGroups}. */
  String TAG = "jdk-neutral";
}
