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
 * int[] two = LocalPorts.free(2);   // different ports, for a server that listens on two
 * await().until(() -> LocalPorts.listening(port));
 * }</pre>
 */
public final class LocalPorts {
  private LocalPorts() {}

  /** A port nothing listens on right now. */
  public static int free() throws IOException {
    return free(1)[0];
  }

  /**
   * {@code count} different ports nothing listens on right now. Taking them one by one with
   * {@link #free()} can give the same port twice, since each is released before the next is asked
   * for; a Kafka broker given one port for both its listeners refuses to start.
   */
  public static int[] free(int count) throws IOException {
    ServerSocket[] sockets = new ServerSocket[count];
    try {
      int[] ports = new int[count];
      for (int i = 0; i < count; i++) {
        sockets[i] = new ServerSocket(0);
        ports[i] = sockets[i].getLocalPort();
      }
      return ports;
    } finally {
      for (ServerSocket socket : sockets) {
        if (socket != null) {
          socket.close();
        }
      }
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
