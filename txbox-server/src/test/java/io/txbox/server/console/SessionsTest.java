package io.txbox.server.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.txbox.server.console.ConsoleUsers.Role;
import io.txbox.server.console.Sessions.Session;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class SessionsTest {
  private final Sessions sessions = new Sessions(Duration.ofHours(8));

  @Test
  void aViewerSigningInAgainAndAgainPushesOutOnlyTheirOwnSessions() {
    Session operator = sessions.open("alice", Role.OPERATOR);
    List<Session> viewer = new ArrayList<>();
    for (int i = 0; i < 1_005; i++) {
      viewer.add(sessions.open("mallory", Role.VIEWER));
    }
    assertThat(sessions.find(operator.id())).as("the operator's session").isPresent();
    assertThat(viewer.stream().filter(s -> sessions.find(s.id()).isPresent()))
        .hasSize(Sessions.MAX_SESSIONS_PER_USER);
    assertThat(sessions.find(viewer.get(viewer.size() - 1).id())).as("the newest").isPresent();
  }
}
