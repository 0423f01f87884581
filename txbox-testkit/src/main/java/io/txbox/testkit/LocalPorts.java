package io.txbox.testkit;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * Ports on 127.0.0.1 for the brokers and servers tests start.
 *
 * <pre>{@code
 * int port = LocalPorts.free();
 * await().until(() -> LocalPorts.listening(port));
 * }</pre>
 */
public final class LocalPorts {
  private LocalPorts() {}

  /** A port nothing listens on right now. */
  public static int free() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      socket.setReuseAddress(true);
      return socket.getLocalPort();
    }
  }

  /** Whether {@code port} accepts connections; asked before a client, which may log every refusal. */
  public static boolean listening(int port) {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }
}
