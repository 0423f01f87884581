package io.txbox.spring.internal;

import io.txbox.Janitor;
import io.txbox.spi.Subscriber;
import io.txbox.spring.InboxListeners;
import io.txbox.spring.RelayState;
import io.txbox.spring.TxboxService;
import java.util.ArrayList;
import java.util.List;

/** The application's background loops whose last step failed: for the health detail and a gauge. */
public final class TroubledLoops {
  private TroubledLoops() {}

  /** Their names ({@code relay}, {@code janitor}, {@code listener <consumer>}); any argument may be null. */
  public static List<String> of(RelayState relay, TxboxService<Janitor> janitor, InboxListeners listeners) {
    List<String> troubled = new ArrayList<>();
    if (relay != null && relay.isTroubled()) {
      troubled.add("relay");
    }
    if (janitor != null && janitor.current().filter(Janitor::isTroubled).isPresent()) {
      troubled.add("janitor");
    }
    if (listeners != null) {
      for (String consumer : listeners.consumers()) {
        if (listeners.subscriber(consumer).filter(Subscriber::isTroubled).isPresent()) {
          troubled.add("listener " + consumer);
        }
      }
    }
    return troubled;
  }
}
