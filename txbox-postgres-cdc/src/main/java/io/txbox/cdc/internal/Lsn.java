package io.txbox.cdc.internal;

/** PostgreSQL's way of writing a WAL position: two hex halves, {@code 16/B374D848}. */
public final class Lsn {
  private Lsn() {}

  /** {@code lsn} as PostgreSQL writes it. */
  public static String format(long lsn) {
    return Long.toHexString(lsn >>> 32).toUpperCase() + "/" + Long.toHexString(lsn & 0xffffffffL).toUpperCase();
  }

  /** The position PostgreSQL wrote as {@code text}, such as {@code 16/B374D848}. */
  public static long parse(String text) {
    int slash = text.indexOf('/');
    if (slash < 1) {
      throw new IllegalArgumentException("not a WAL position: '" + text + "'");
    }
    return (Long.parseLong(text.substring(0, slash), 16) << 32) | Long.parseLong(text.substring(slash + 1), 16);
  }
}
