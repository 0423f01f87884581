package io.txbox.jackson;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Turns an event of one version into the next version, on its JSON tree: rename a field, add one
 * with a default, split one, change a unit. Registered per type and source version; chained up
 * to the current version before a handler sees the event, so a handler only knows the current shape.
 *
 * <pre>{@code
 * Upcaster renameCustomer = event -> {
 *   event.set("customerId", event.remove("customer"));
 *   return event;
 * };
 * }</pre>
 */
@FunctionalInterface
public interface Upcaster {

  /** The event as the next version has it; may change {@code event} in place and return it. */
  ObjectNode upcast(ObjectNode event);
}
