package io.txbox.jackson;

import java.time.Instant;
import java.util.Map;
import java.util.UUID;

/**
 * What a typed handler knows about an event besides its body.
 *
 * <pre>{@code
 * handlers.on(OrderPlaced.class, (tx, order, meta) -> payments.capture(order, meta.idempotencyKey()));
 * }</pre>
 *
 * @param id the event id
 * @param type the type name
 * @param writtenVersion the version it was written in, before any upcasting
 * @param key the event key, or null
 * @param createdAt when it was created
 * @param headers its user headers
 * @param idempotencyKey the inbox's key for calls to external systems
 */
public record EventMetadata(UUID id, String type, int writtenVersion, String key, Instant createdAt,
    Map<String, String> headers, String idempotencyKey) {}
