package io.txbox.cdc.internal;

/** PostgreSQL's way of writing a WAL position: two hex halves, {@code 16/B374D848}. */
public final class Lsn {
  private Lsn() {}

  /** {@code lsn} as PostgreSQL writes it. */
  public static String format(long lsn) {
    return Long.toHexString(lsn >>> 32).toUpperCase() + "/" + Long.toHexString(lsn & 0xffffffffL).toUpperCase();
  }
}
