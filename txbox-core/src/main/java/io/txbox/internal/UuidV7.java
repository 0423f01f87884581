package io.txbox.internal;

import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/** Time-ordered UUIDs (RFC 9562 version 7): 48 bits of Unix milliseconds, then random bits. */
public final class UuidV7 {
  private UuidV7() {}

  /** A new UUIDv7 for the current time. */
  public static UUID next() {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    long millis = System.currentTimeMillis();
    long mostSignificant = (millis << 16) | 0x7000L | (random.nextLong() & 0x0FFFL);
    long leastSignificant = (random.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
    return new UUID(mostSignificant, leastSignificant);
  }
}
