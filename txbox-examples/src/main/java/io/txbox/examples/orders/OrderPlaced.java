package io.txbox.examples.orders;

import java.util.UUID;

/**
 * The event an order service publishes when an order is placed, at version 3. {@code sequence}
 * counts the orders of its SKU (1, 2, 3, ...), so a consumer can tell whether it sees them in
 * order. How it got here, with events of every version still in logs and topics:
 *
 * <ul>
 *   <li>version 1: {@code orderId, customer, sku, quantity, sequence, amount} (a decimal string
 *       in euros, {@code "12.50"});
 *   <li>version 2: {@code customer} renamed {@code customerId}; {@code currency} added;
 *   <li>version 3: {@code amount} became {@code amountMinor}, minor units of the currency.
 * </ul>
 *
 * {@link ShopEvents} holds the upcasters that read versions 1 and 2 as this record.
 *
 * <pre>{@code
 * OrderPlaced order = new OrderPlaced(orderId, "customer-4", "sku-7", 2, 41, "EUR", 2500);
 * outbox.sendEvent(tx, order); // an outbox built with ShopEvents.types(objectMapper)
 * }</pre>
 */
public record OrderPlaced(UUID orderId, String customerId, String sku, int quantity, long sequence,
    String currency, long amountMinor) {}
