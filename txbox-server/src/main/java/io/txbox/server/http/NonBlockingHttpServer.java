package io.txbox.server.http;

import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small HTTP/1.1 server whose threads no client can hold: one thread reads every request
 * without blocking, and a handler runs only once its request has arrived whole. The JDK's own
 * {@code HttpServer} hands each connection to a worker thread before reading a byte of it, so a
 * few clients that send their headers slowly take every worker, and a health probe waits behind
 * them: four such sockets got a healthy relay restarted by its kubelet over and over.
 *
 * <p>Each connection carries one request and is closed after the answer ({@code Connection:
 * close}); Prometheus and probes open one per request anyway. A client must send its whole
 * request within {@link Limits#requestTimeout}, in at most {@link Limits#maxHeadBytes} of request
 * line and headers and {@link Limits#maxBodyBytes} of body (with a {@code Content-Length}: chunked
 * bodies are refused), and must take the answer within the same time. Past {@link
 * Limits#maxConnections} open connections, the one that has waited longest for its request is
 * closed to make room, so that a flood of idle sockets delays a new client by no more than a
 * turn of the loop.
 *
 * <pre>{@code
 * NonBlockingHttpServer server = NonBlockingHttpServer.start(new InetSocketAddress("0.0.0.0", 9464),
 *     NonBlockingHttpServer.Limits.DEFAULTS, request -> probes, request -> HttpResponse.text(200, "ok\n"));
 * }</pre>
 */
public final class NonBlockingHttpServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(NonBlockingHttpServer.class);
  /** Longest the loop sleeps between looks at the deadlines. */
  private static final long TICK_MILLIS = 100;
  /**
   * After refusing a request, how long and how much more of it is read and dropped before the
   * connection closes: closing with unread bytes would reset it, and the client would lose the
   * answer that says why.
   */
  private static final long DRAIN_NANOS = Duration.ofSeconds(2).toNanos();
  private static final int DRAIN_BYTES = 1 << 20;

  /**
   * What a client may send and how long it may take.
   *
   * @param maxConnections connections open at once, 16 to 65,536 (default 1,024)
   * @param maxHeadBytes request line and headers, 1 KiB to 1 MiB (default 16 KiB)
   * @param maxBodyBytes request body, 0 to 16 MiB (default 0: no body taken)
   * @param requestTimeout time to send the whole request, and again to take the answer, 1 s to 5 min (default 10 s)
   */
  public record Limits(int maxConnections, int maxHeadBytes, int maxBodyBytes, Duration requestTimeout) {
    /** 1,024 connections, 16 KiB of headers, no body, 10 s. */
    public static final Limits DEFAULTS = new Limits(1024, 16 * 1024, 0, Duration.ofSeconds(10));

    /** Checks each limit, naming it. */
    public Limits {
      requireBetween("maxConnections", maxConnections, 16, 65_536);
      requireBetween("maxHeadBytes", maxHeadBytes, 1024, 1 << 20);
      requireBetween("maxBodyBytes", maxBodyBytes, 0, 16 << 20);
      if (requestTimeout == null || requestTimeout.compareTo(Duration.ofSeconds(1)) < 0
          || requestTimeout.compareTo(Duration.ofMinutes(5)) > 0) {
        throw new IllegalArgumentException("requestTimeout must be >= 1s and <= 5m, was " + requestTimeout);
      }
    }

    /** These limits with another body limit. */
    public Limits withMaxBodyBytes(int bytes) {
      return new Limits(maxConnections, maxHeadBytes, bytes, requestTimeout);
    }

    /** These limits with another request timeout. */
    public Limits withRequestTimeout(Duration timeout) {
      return new Limits(maxConnections, maxHeadBytes, maxBodyBytes, timeout);
    }

    private static void requireBetween(String name, int value, int min, int max) {
      if (value < min || value > max) {
        throw new IllegalArgumentException(name + " must be >= " + min + " and <= " + max + ", was " + value);
      }
    }
  }

  /** Answers one request; runs on the executor the router chose for it. */
  @FunctionalInterface
  public interface Handler {
    HttpResponse answer(HttpRequest request);
  }

  private final ServerSocketChannel listener;
  private final Selector selector;
  private final Limits limits;
  private final Function<HttpRequest, Executor> router;
  private final Handler handler;
  /** Open connections, oldest first: the first one still reading is the one to close when full. */
  private final Set<Connection> connections = new LinkedHashSet<>();
  private final Queue<Runnable> fromWorkers = new ConcurrentLinkedQueue<>();
  private final Thread loop;
  private volatile boolean running = true;

  private NonBlockingHttpServer(ServerSocketChannel listener, Selector selector, Limits limits,
      Function<HttpRequest, Executor> router, Handler handler) {
    this.listener = listener;
    this.selector = selector;
    this.limits = limits;
    this.router = router;
    this.handler = handler;
    this.loop = new Thread(this::run, "txbox-http-" + port());
    loop.setDaemon(true);
  }

  /**
   * Listens on {@code address} and serves until closed.
   *
   * @param router the executor each request's handler runs on, so that a slow page never delays a probe
   * @throws BindException when the address is in use
   * @throws IOException when the address cannot be listened on otherwise
   */
  public static NonBlockingHttpServer start(InetSocketAddress address, Limits limits,
      Function<HttpRequest, Executor> router, Handler handler) throws IOException {
    ServerSocketChannel listener = ServerSocketChannel.open();
    Selector selector = Selector.open();
    try {
      listener.bind(address, 128);
      listener.configureBlocking(false);
      listener.register(selector, SelectionKey.OP_ACCEPT);
    } catch (IOException | RuntimeException e) {
      listener.close();
      selector.close();
      throw e;
    }
    NonBlockingHttpServer server = new NonBlockingHttpServer(listener, selector, limits, router, handler);
    server.loop.start();
    return server;
  }

  /** The address it listens on, with the port chosen when 0 was asked for. */
  public InetSocketAddress address() {
    try {
      return (InetSocketAddress) listener.getLocalAddress();
    } catch (IOException e) {
      throw new IllegalStateException("the listening socket is closed", e);
    }
  }

  private int port() {
    return address().getPort();
  }

  private void run() {
    while (running) {
      try {
        selector.select(TICK_MILLIS);
        Runnable task;
        while ((task = fromWorkers.poll()) != null) {
          task.run();
        }
        Iterator<SelectionKey> ready = selector.selectedKeys().iterator();
        while (ready.hasNext()) {
          SelectionKey key = ready.next();
          ready.remove();
          handle(key);
        }
        closeOverdue(System.nanoTime());
      } catch (IOException | RuntimeException e) {
        // A failed turn must not end the loop: every later client would find nobody listening.
        log.warn("http server on port {}: {}", port(), e.toString());
      }
    }
    closeAll();
  }

  private void handle(SelectionKey key) {
    if (!key.isValid()) {
      return;
    }
    if (key.isAcceptable()) {
      accept();
      return;
    }
    Connection c = (Connection) key.attachment();
    try {
      if (key.isReadable()) {
        if (c.state == State.DRAINING) {
          c.drain();
        } else {
          c.read();
        }
      } else if (key.isWritable()) {
        c.write();
      }
    } catch (IOException | RuntimeException e) {
      c.close(); // a client gone or misbehaving: its connection, and nothing else
    }
  }

  private void accept() {
    SocketChannel channel;
    try {
      while ((channel = listener.accept()) != null) {
        if (connections.size() >= limits.maxConnections()) {
          closeLongestWaiting();
        }
        channel.configureBlocking(false);
        Connection c = new Connection(channel, System.nanoTime() + limits.requestTimeout().toNanos());
        c.key = channel.register(selector, SelectionKey.OP_READ, c);
        connections.add(c);
      }
    } catch (IOException e) {
      log.debug("http server on port {}: accept failed: {}", port(), e.toString());
    }
  }

  /** Makes room: the oldest connection still sending its request, else the oldest of all. */
  private void closeLongestWaiting() {
    Connection victim = null;
    for (Connection c : connections) {
      if (c.state == State.READING) {
        victim = c;
        break;
      }
    }
    if (victim == null && !connections.isEmpty()) {
      victim = connections.iterator().next();
    }
    if (victim != null) {
      victim.close();
    }
  }

  private void closeOverdue(long now) {
    for (Iterator<Connection> it = connections.iterator(); it.hasNext(); ) {
      Connection c = it.next();
      if (c.state != State.ANSWERING && now - c.deadline > 0) {
        it.remove();
        c.closeChannel();
      }
    }
  }

  private void closeAll() {
    for (Connection c : connections) {
      c.closeChannel();
    }
    connections.clear();
    try {
      listener.close();
      selector.close();
    } catch (IOException e) {
      log.debug("http server: closing failed: {}", e.toString());
    }
  }

  /** Stops listening and closes every connection; answers in progress are dropped. */
  @Override
  public void close() {
    running = false;
    selector.wakeup();
    try {
      loop.join(TICK_MILLIS * 20);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private enum State { READING, ANSWERING, WRITING, DRAINING }

  /** One client connection: its request as it arrives, then its answer as it leaves. */
  private final class Connection {
    private final SocketChannel channel;
    private final RequestReader reader;
    private SelectionKey key;
    private State state = State.READING;
    private long deadline;
    private ByteBuffer answer;
    private boolean refused;
    private int drained;

    Connection(SocketChannel channel, long deadline) {
      this.channel = channel;
      this.deadline = deadline;
      this.reader = new RequestReader(limits.maxHeadBytes(), limits.maxBodyBytes());
    }

    void read() throws IOException {
      int n = channel.read(reader.buffer());
      if (n < 0) {
        close();
        return;
      }
      RequestReader.Outcome outcome = reader.advance(remote());
      if (outcome instanceof RequestReader.Refused refusal) {
        refused = true;
        respond(refusal.response(), false);
      } else if (outcome instanceof RequestReader.Complete complete) {
        dispatch(complete.request());
      }
    }

    private InetSocketAddress remote() throws IOException {
      return (InetSocketAddress) channel.getRemoteAddress();
    }

    private void dispatch(HttpRequest request) {
      state = State.ANSWERING;
      key.interestOps(0);
      Runnable work = () -> {
        HttpResponse response;
        try {
          response = handler.answer(request);
        } catch (RuntimeException | Error e) {
          log.warn("http server: {} {} failed", request.method(), request.path(), e);
          response = HttpResponse.text(500, "internal error\n");
        }
        HttpResponse answered = response;
        fromWorkers.add(() -> respond(answered, request.method().equals("HEAD")));
        selector.wakeup();
      };
      try {
        router.apply(request).execute(work);
      } catch (RejectedExecutionException e) {
        respond(HttpResponse.text(503, "busy\n"), false);
      }
    }

    /** Starts writing the answer; the client gets a fresh timeout to take it. */
    void respond(HttpResponse response, boolean headOnly) {
      if (!channel.isOpen()) {
        return;
      }
      answer = response.encode(headOnly);
      state = State.WRITING;
      deadline = System.nanoTime() + limits.requestTimeout().toNanos();
      try {
        write();
      } catch (IOException | RuntimeException e) {
        close();
      }
    }

    void write() throws IOException {
      channel.write(answer);
      if (answer.hasRemaining()) {
        key.interestOps(SelectionKey.OP_WRITE);
      } else if (refused) {
        channel.shutdownOutput();
        state = State.DRAINING;
        deadline = System.nanoTime() + DRAIN_NANOS;
        key.interestOps(SelectionKey.OP_READ);
      } else {
        close();
      }
    }

    /** Reads and drops what a refused client still sends, until it closes or the drain's limits. */
    void drain() throws IOException {
      ByteBuffer scratch = reader.buffer().clear();
      int n = channel.read(scratch);
      drained += Math.max(n, 0);
      if (n < 0 || drained > DRAIN_BYTES) {
        close();
      }
    }

    void close() {
      connections.remove(this);
      closeChannel();
    }

    void closeChannel() {
      try {
        channel.close();
      } catch (IOException e) {
        // gone either way
      }
    }
  }
}
