package io.txbox.server.console;

import io.txbox.server.TerminalText;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The reverse proxies whose {@code X-Forwarded-For} the console believes, by address or range
 * ({@code 10.0.0.5}, {@code 10.0.0.0/8}, {@code fd00::/8}). The client of a request is its peer,
 * unless the peer is one of them: then it is the last address of {@code X-Forwarded-For} that is
 * not one of them, since each proxy appends the address it got the request from, and anything
 * before that was written by the client and may be forged.
 *
 * <pre>{@code
 * TrustedProxies proxies = TrustedProxies.parse(List.of("10.0.0.0/8"));
 * proxies.client("10.1.2.3", List.of("203.0.113.9")); // 203.0.113.9
 * proxies.client("198.51.100.7", List.of("1.2.3.4")); // 198.51.100.7: anyone may write the header
 * }</pre>
 */
final class TrustedProxies {
  /** IP literals: nothing that {@link InetAddress#getByName} would look up as a name. */
  private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");
  private static final Pattern IPV6 = Pattern.compile("[0-9a-fA-F:.]{2,45}");
  /** Addresses of one header looked at: a proxy chain is short, a forged header may not be. */
  private static final int MAX_HOPS = 20;

  private record Range(byte[] network, int bits) {
    boolean contains(byte[] address) {
      if (address.length != network.length) {
        return false;
      }
      for (int bit = 0; bit < bits; bit++) {
        int mask = 0x80 >>> (bit % 8);
        if ((address[bit / 8] & mask) != (network[bit / 8] & mask)) {
          return false;
        }
      }
      return true;
    }
  }

  private final List<Range> ranges;

  private TrustedProxies(List<Range> ranges) {
    this.ranges = ranges;
  }

  /** None: every request's client is its peer. */
  static TrustedProxies none() {
    return new TrustedProxies(List.of());
  }

  /**
   * Proxies from {@code --trusted-proxy} values.
   *
   * @throws IllegalArgumentException naming the option and the entry that is no address or range
   */
  static TrustedProxies parse(List<String> entries) {
    List<Range> ranges = new ArrayList<>();
    for (String entry : entries) {
      ranges.add(range(entry.trim()));
    }
    return new TrustedProxies(List.copyOf(ranges));
  }

  boolean isEmpty() {
    return ranges.isEmpty();
  }

  /** Whether {@code address} (an IP literal) is a trusted proxy's. */
  boolean contains(String address) {
    byte[] bytes = literal(address);
    return bytes != null && ranges.stream().anyMatch(r -> r.contains(bytes));
  }

  /**
   * The client of a request from {@code peer} whose {@code X-Forwarded-For} headers are
   * {@code forwardedFor}: the peer, unless it is a trusted proxy and the header names another.
   */
  String client(String peer, List<String> forwardedFor) {
    if (forwardedFor.isEmpty() || !contains(peer)) {
      return peer;
    }
    List<String> hops = new ArrayList<>();
    forwardedFor.forEach(header -> hops.addAll(List.of(header.split(","))));
    for (int i = hops.size() - 1; i >= Math.max(0, hops.size() - MAX_HOPS); i--) {
      String hop = hops.get(i).trim();
      byte[] bytes = literal(hop);
      if (bytes == null) {
        return peer; // garbage where an address should be: the proxy before it is the client we know
      }
      if (!contains(hop)) {
        return hop;
      }
    }
    return peer;
  }

  private static Range range(String entry) {
    int slash = entry.indexOf('/');
    byte[] network = literal(slash < 0 ? entry : entry.substring(0, slash));
    if (network == null) {
      throw refused(entry);
    }
    int bits = network.length * 8;
    if (slash >= 0) {
      try {
        bits = Integer.parseInt(entry.substring(slash + 1));
      } catch (NumberFormatException e) {
        throw refused(entry);
      }
      if (bits < 0 || bits > network.length * 8) {
        throw refused(entry);
      }
    }
    return new Range(network, bits);
  }

  private static IllegalArgumentException refused(String entry) {
    return new IllegalArgumentException("invalid --trusted-proxy (TXBOX_TRUSTED_PROXY): '" + TerminalText.of(entry, 100)
        + "' is no IP address or range: give the proxy's address, such as 10.0.0.5, or a range, such as 10.0.0.0/8");
  }

  /** The address's bytes, or null when it is no IP literal (never a name: nothing is looked up). */
  private static byte[] literal(String text) {
    boolean literal = IPV4.matcher(text).matches() || text.indexOf(':') >= 0 && IPV6.matcher(text).matches();
    if (!literal) {
      return null;
    }
    try {
      return InetAddress.getByName(text).getAddress();
    } catch (UnknownHostException e) {
      return null;
    }
  }
}
