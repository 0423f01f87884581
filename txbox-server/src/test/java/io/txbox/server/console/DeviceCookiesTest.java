package io.txbox.server.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DeviceCookiesTest {
  @TempDir Path dir;
  private final Instant now = Instant.parse("2026-11-29T12:00:00Z");

  private DeviceCookies devices(String bobsPassword) throws Exception {
    Path users = dir.resolve("users-" + bobsPassword + ".properties");
    Files.writeString(users, "bob = viewer " + ConsoleUsers.hash(bobsPassword.toCharArray()) + "\n"
        + "carol = operator " + ConsoleUsers.hash("carol-password".toCharArray()) + "\n");
    return new DeviceCookies(ConsoleUsers.load(users));
  }

  private static String value(String setCookie) {
    return setCookie.substring(DeviceCookies.NAME.length() + 1, setCookie.indexOf(';'));
  }

  @Test
  void aCookieProvesItsUserUntilItRunsOut() throws Exception {
    DeviceCookies devices = devices("bob-password");
    String issued = devices.issue("bob", now);

    assertThat(issued).contains("Path=/login", "HttpOnly", "SameSite=Strict", "Max-Age=2592000");
    assertThat(devices.proves(value(issued), "bob", now.plus(DeviceCookies.MAX_AGE).minusSeconds(1))).isTrue();
    assertThat(devices.proves(value(issued), "bob", now.plus(DeviceCookies.MAX_AGE).plusSeconds(1))).isFalse();
    assertThat(devices.proves(value(issued), "carol", now)).as("another user").isFalse();
  }

  @Test
  void aForgedTamperedOrHugeCookieProvesNothing() throws Exception {
    DeviceCookies devices = devices("bob-password");
    String good = value(devices.issue("bob", now));
    String[] parts = good.split("\\.");

    for (String bad : new String[] {"", "...", "Ym9i.1.AAAA", parts[0] + "." + (now.getEpochSecond() + 1) + "." + parts[2],
        value(devices.issue("carol", now)).split("\\.")[0] + "." + parts[1] + "." + parts[2],
        parts[0] + ".x." + parts[2], parts[0] + "." + parts[1] + ".%%%", good + "A".repeat(500),
        parts[0] + "." + Long.MAX_VALUE + "." + parts[2]}) {
      assertThat(devices.proves(bad, "bob", now)).as(bad).isFalse();
    }
    assertThat(devices.proves(null, "bob", now)).isFalse();
  }

  @Test
  void aRestartEndsNoProofAndANewPasswordEndsEvery() throws Exception {
    Path users = dir.resolve("users.properties");
    Files.writeString(users, "bob = viewer " + ConsoleUsers.hash("bob-password".toCharArray()) + "\n");
    String issued = value(new DeviceCookies(ConsoleUsers.load(users)).issue("bob", now));

    assertThat(new DeviceCookies(ConsoleUsers.load(users)).proves(issued, "bob", now)).as("the same file, read again")
        .isTrue();
    Files.writeString(users, "bob = viewer " + ConsoleUsers.hash("bob-new-password".toCharArray()) + "\n");
    assertThat(new DeviceCookies(ConsoleUsers.load(users)).proves(issued, "bob", now)).as("a new password").isFalse();
  }
}
