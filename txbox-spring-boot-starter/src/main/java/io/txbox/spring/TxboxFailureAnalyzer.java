package io.txbox.spring;

import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;

/**
 * The first screen of a start-up that txbox refused: the refusal's own message, which names the
 * property and the fix ({@code txbox setting refused, change txbox.relay.delivery ...}, {@code txbox
 * has no database module for jdbc:postgresql: ...}), instead of the last {@code Caused by:} of four
 * or five nested bean-creation exceptions. Registered in {@code META-INF/spring.factories}; Spring
 * Boot asks it for every failed start and it answers only for refusals thrown by txbox's code.
 *
 * <pre>
 * ***************************
 * APPLICATION FAILED TO START
 * ***************************
 * Description:
 * txbox refused to start: txbox setting refused, txbox.relay.delivery=exactly-once: ...
 * Action:
 * Change the setting the description names; docs/spring.md lists every txbox property.
 * </pre>
 */
public final class TxboxFailureAnalyzer implements FailureAnalyzer {
  @Override
  public FailureAnalysis analyze(Throwable failure) {
    Throwable refusal = null;
    for (Throwable t = failure; t != null && refusal == null; t = t.getCause() == t ? null : t.getCause()) {
      if ((t instanceof IllegalArgumentException || t instanceof IllegalStateException) && thrownByTxbox(t)) {
        refusal = t; // the outermost of txbox's own: one that wraps another adds the setting's name
      }
    }
    if (refusal == null) {
      return null;
    }
    return new FailureAnalysis("txbox refused to start: " + refusal.getMessage(),
        "Change the setting the description names, or add what it says is missing; docs/spring.md lists every"
            + " txbox property.", refusal);
  }

  private static boolean thrownByTxbox(Throwable t) {
    StackTraceElement[] trace = t.getStackTrace();
    return trace.length > 0 && trace[0].getClassName().startsWith("io.txbox.");
  }
}
