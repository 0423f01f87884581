package io.txbox.server.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class TrustedProxiesTest {
  private final TrustedProxies proxies = TrustedProxies.parse(List.of("10.0.0.0/8", "192.0.2.1", "fd00::/8"));

  @Test
  void aTrustedProxyNamesTheClientItGotTheRequestFrom() {
    assertThat(proxies.client("10.1.2.3", List.of("203.0.113.9"))).isEqualTo("203.0.113.9");
    assertThat(proxies.client("192.0.2.1", List.of("203.0.113.9, 10.4.4.4"))).as("through two proxies")
        .isEqualTo("203.0.113.9");
    assertThat(proxies.client("fd00::1", List.of("2001:db8::7"))).isEqualTo("2001:db8::7");
  }

  @Test
  void whatTheClientWroteBeforeTheProxysEntryIsIgnored() {
    assertThat(proxies.client("10.1.2.3", List.of("1.1.1.1, 203.0.113.9"))).isEqualTo("203.0.113.9");
    assertThat(proxies.client("10.1.2.3", List.of("1.1.1.1", "203.0.113.9"))).as("two header lines")
        .isEqualTo("203.0.113.9");
  }

  @Test
  void fromAnyOtherPeerTheHeaderIsIgnored() {
    assertThat(proxies.client("198.51.100.7", List.of("203.0.113.9"))).isEqualTo("198.51.100.7");
    assertThat(TrustedProxies.none().client("10.1.2.3", List.of("203.0.113.9"))).isEqualTo("10.1.2.3");
  }

  @Test
  void garbageInTheHeaderLeavesTheProxyAsTheClientAndLooksNothingUp() {
    assertThat(proxies.client("10.1.2.3", List.of("evil.example"))).isEqualTo("10.1.2.3");
    assertThat(proxies.client("10.1.2.3", List.of("<script>"))).isEqualTo("10.1.2.3");
    assertThat(proxies.client("10.1.2.3", List.of("abc.def"))).isEqualTo("10.1.2.3");
    assertThat(proxies.client("10.1.2.3", List.of(""))).isEqualTo("10.1.2.3");
  }

  @Test
  void anEntryThatIsNoAddressOrRangeIsRefusedNamingTheOption() {
    assertThatThrownBy(() -> TrustedProxies.parse(List.of("proxy.internal")))
        .hasMessage("invalid --trusted-proxy (TXBOX_TRUSTED_PROXY): 'proxy.internal' is no IP address or range:"
            + " give the proxy's address, such as 10.0.0.5, or a range, such as 10.0.0.0/8");
    assertThatThrownBy(() -> TrustedProxies.parse(List.of("10.0.0.0/33"))).hasMessageContaining("'10.0.0.0/33'");
    assertThatThrownBy(() -> TrustedProxies.parse(List.of("10.0.0.0/x"))).hasMessageContaining("'10.0.0.0/x'");
  }
}
