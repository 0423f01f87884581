package io.txbox.server.http;

import com.sun.management.UnixOperatingSystemMXBean;
import io.txbox.server.TerminalText;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpHeaderValue;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.BufferUtil;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.ScheduledExecutorScheduler;
import org.eclipse.jetty.util.thread.Scheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP/1.1 server of the console and of the relay's endpoint: Jetty 12, with txbox's limits.
 * Jetty reads every request without holding a thread, so clients that send slowly or stay idle
 * delay nobody; a handler runs only once its request has arrived whole, on the executor the
 * router chose for it, so that a slow page never delays a probe.
 *
 * <p>Each connection carries one request and is closed after the answer ({@code Connection:
 * close}); Prometheus and probes open one per request anyway. A client must send its whole
 * request within {@link Limits#requestTimeout} of connecting, in at most {@link
 * Limits#maxHeadBytes} of request line and headers and {@link Limits#maxBodyBytes} of body, and
 * may stall in taking the answer no longer than that either. A request that waited for its
 * executor longer than that, or whose client has gone, is dropped unanswered; one the executor
 * refuses (its queue is full) is answered {@code 503}. At most {@link Limits#maxConnections} are
 * open at once, and never more than half the files the process may open ({@code ulimit -n}), so
 * that the database, the broker and the JVM's own files keep theirs: past that, new ones wait to
 * be accepted, rather than an accept that fails for want of a file descriptor being tried again
 * at once, without end. Requests Jetty finds malformed (a NUL or
 * a bare CR in a header, HTTP/1.1 without {@code Host}, an ambiguous path) are answered {@code 400}
 * by Jetty, with no text of theirs repeated.
 *
 * <pre>{@code
 * HttpServer server = HttpServer.start(new InetSocketAddress("0.0.0.0", 9464), HttpServer.Limits.DEFAULTS,
 *     request -> probes, request -> HttpResponse.text(200, "ok\n"));
 * }</pre>
 */
public final class HttpServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(HttpServer.class);
  /**
   * What a client may send and how long it may take.
   *
   * @param maxConnections connections open at once, 16 to 65,536 (default 1,024)
   * @param maxHeadBytes request line and headers, 1 KiB to 1 MiB (default 16 KiB)
   * @param maxBodyBytes request body, 0 to 16 MiB (default 0: no body taken)
   * @param requestTimeout time to send the whole request, to wait for a thread, and to take each
   *     part of the answer, 1 s to 5 min (default 10 s)
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

  /** Jetty's own threads: they read and write, never run a handler. */
  private static final int IO_THREADS = 8;

  private final Server server;
  private final ServerConnector connector;

  private HttpServer(Server server, ServerConnector connector) {
    this.server = server;
    this.connector = connector;
  }

  /**
   * Listens on {@code address} and serves until closed.
   *
   * @param router the executor each request's handler runs on, so that a slow page never delays a probe
   * @throws BindException when the address is in use, or is not this host's
   * @throws IOException when the address cannot be listened on otherwise
   */
  public static HttpServer start(InetSocketAddress address, Limits limits, Function<HttpRequest, Executor> router,
      Handler handler) throws IOException {
    QueuedThreadPool threads = new QueuedThreadPool(IO_THREADS, 2);
    threads.setName("txbox-http");
    threads.setDaemon(true);
    Scheduler scheduler = new ScheduledExecutorScheduler("txbox-http-deadlines", true);
    Server server = new Server(threads, scheduler, null);
    HttpConfiguration config = new HttpConfiguration();
    config.setRequestHeaderSize(limits.maxHeadBytes());
    config.setSendServerVersion(false);
    config.setSendXPoweredBy(false);
    ServerConnector connector = new ServerConnector(server, 1, 1, new HttpConnectionFactory(config));
    connector.setHost(address.getHostString());
    connector.setPort(address.getPort());
    connector.setIdleTimeout(limits.requestTimeout().toMillis());
    connector.setAcceptQueueSize(128);
    Deadlines deadlines = new Deadlines(scheduler, limits.requestTimeout());
    connector.addBean(deadlines);
    server.addConnector(connector);
    server.addBean(new NetworkConnectionLimit(connectionCap(limits.maxConnections(), maxOpenFiles()), connector));
    server.setErrorHandler(new PlainErrors());
    server.setHandler(new Dispatch(limits, router, handler, deadlines));
    server.setStopTimeout(1000);
    try {
      server.start();
    } catch (IOException e) {
      stopQuietly(server);
      throw e.getCause() instanceof BindException bind ? bind : e;
    } catch (Exception e) {
      stopQuietly(server);
      throw new IOException("cannot start the HTTP server on " + address + ": " + e.getMessage(), e);
    }
    return new HttpServer(server, connector);
  }

  /**
   * The connections to keep open at most: {@code asked}, but at most half of {@code maxOpenFiles}
   * (at least 16), when it is known (it is not: 0 or less).
   */
  static int connectionCap(int asked, long maxOpenFiles) {
    if (maxOpenFiles <= 0 || asked <= maxOpenFiles / 2) {
      return asked;
    }
    int cap = (int) Math.max(16, maxOpenFiles / 2);
    log.info("http: at most {} connections at once, not {}: this process may open at most {} files (ulimit -n)",
        cap, asked, maxOpenFiles);
    return cap;
  }

  /** The most files this process may open, where the JVM tells; else 0. */
  private static long maxOpenFiles() {
    return ManagementFactory.getOperatingSystemMXBean() instanceof UnixOperatingSystemMXBean unix
        ? unix.getMaxFileDescriptorCount() : 0;
  }

  /** Where it listens: the port chosen when 0 was asked for. */
  public InetSocketAddress address() {
    return new InetSocketAddress(connector.getHost(), connector.getLocalPort());
  }

  @Override
  public void close() {
    stopQuietly(server);
  }

  private static void stopQuietly(Server server) {
    try {
      server.stop();
    } catch (Exception e) {
      // stopping: nothing to do about it
    }
  }

  /**
   * Closes a connection whose request has not arrived whole within the request timeout. Jetty's
   * idle timeout alone would let a client that sends one byte a second hold a connection forever.
   */
  private static final class Deadlines implements Connection.Listener {
    private final Scheduler scheduler;
    private final Duration timeout;
    private final Set<Connection> answering = ConcurrentHashMap.newKeySet();

    Deadlines(Scheduler scheduler, Duration timeout) {
      this.scheduler = scheduler;
      this.timeout = timeout;
    }

    @Override
    public void onOpened(Connection connection) {
      scheduler.schedule(() -> {
        if (!answering.contains(connection)) {
          connection.getEndPoint().close();
        }
      }, timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void onClosed(Connection connection) {
      answering.remove(connection);
    }

    void arrived(Request request) {
      answering.add(request.getConnectionMetaData().getConnection());
    }
  }

  /** Reads the body, then runs the handler on the executor the router picks for the request. */
  private static final class Dispatch extends org.eclipse.jetty.server.Handler.Abstract {
    private final Limits limits;
    private final Function<HttpRequest, Executor> router;
    private final Handler handler;
    private final Deadlines deadlines;

    Dispatch(Limits limits, Function<HttpRequest, Executor> router, Handler handler, Deadlines deadlines) {
      super(InvocationType.NON_BLOCKING);
      this.limits = limits;
      this.router = router;
      this.handler = handler;
      this.deadlines = deadlines;
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) {
      long length = request.getLength();
      if (length > limits.maxBodyBytes()) {
        return answer(request, response, callback, HttpResponse.text(413, "the body may have at most "
            + limits.maxBodyBytes() + " bytes\n"));
      }
      if (length < 0 && request.getHeaders().contains(HttpHeader.TRANSFER_ENCODING)) {
        return answer(request, response, callback, HttpResponse.text(411, "give a Content-Length\n"));
      }
      deadlines.arrived(request); // whole but for the body, which Content-Length bounds
      if (length <= 0) {
        dispatch(request, response, callback, new byte[0]);
      } else {
        Content.Source.asByteArrayAsync(request, limits.maxBodyBytes()).whenComplete((body, failure) -> {
          if (failure != null) {
            callback.failed(failure);
          } else {
            dispatch(request, response, callback, body);
          }
        });
      }
      return true;
    }

    private void dispatch(Request request, Response response, Callback callback, byte[] body) {
      HttpRequest whole = toRequest(request, body);
      long deadline = System.nanoTime() + limits.requestTimeout().toNanos();
      try {
        router.apply(whole).execute(() -> {
          if (clientLeft(request)) {
            callback.failed(new IOException("dropped unanswered: the client has gone"));
          } else if (System.nanoTime() > deadline) {
            write(request, response, callback, busy("waited too long for a thread"));
          } else {
            write(request, response, callback, answer(whole));
          }
        });
      } catch (RejectedExecutionException e) {
        write(request, response, callback, busy("every thread is taken and the queue is full"));
      }
    }

    /** The handler's answer; one that throws, whatever it throws, is a 500 that says nothing of why. */
    private HttpResponse answer(HttpRequest whole) {
      try {
        return handler.answer(whole);
      } catch (RuntimeException | Error e) {
        log.warn("{} {} failed", whole.method(), TerminalText.of(whole.path(), 200), e);
        return HttpResponse.text(500, "the request failed: the log says why\n");
      }
    }

    private static HttpResponse busy(String why) {
      return HttpResponse.text(503, "busy (" + why + "): try again\n").with("Retry-After", "1");
    }

    /**
     * Whether the client has closed its side: a burst of requests sent and dropped at once must
     * not each cost a page. Jetty reads nothing more of a connection whose request it handed over,
     * so a read here takes nothing from it; one request per connection, so nothing that follows
     * is lost either. A client that shuts its output and still waits for the answer is taken as
     * gone: no browser, probe or Prometheus does so.
     */
    private static boolean clientLeft(Request request) {
      EndPoint endPoint = request.getConnectionMetaData().getConnection().getEndPoint();
      if (!endPoint.isOpen() || endPoint.isInputShutdown()) {
        return true;
      }
      try {
        return endPoint.fill(BufferUtil.allocate(64)) < 0;
      } catch (IOException e) {
        return true;
      }
    }

    private static boolean answer(Request request, Response response, Callback callback, HttpResponse answer) {
      write(request, response, callback, answer);
      return true;
    }

    private static void write(Request request, Response response, Callback callback, HttpResponse answer) {
      try {
        response.setStatus(answer.status());
        answer.headers().forEach((name, value) -> response.getHeaders().put(name, value));
        answer.cookies().forEach(cookie -> response.getHeaders().add(HttpHeader.SET_COOKIE, cookie));
        response.getHeaders().put(HttpHeader.CONNECTION, HttpHeaderValue.CLOSE.asString());
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, answer.body().length);
        boolean head = request.getMethod().equals("HEAD");
        response.write(true, head ? ByteBuffer.allocate(0) : ByteBuffer.wrap(answer.body()), callback);
      } catch (RuntimeException e) {
        callback.failed(e);
      }
    }

    private static HttpRequest toRequest(Request request, byte[] body) {
      Map<String, List<String>> headers = new LinkedHashMap<>();
      for (HttpField field : request.getHeaders()) {
        headers.computeIfAbsent(field.getLowerCaseName(), k -> new ArrayList<>()).add(field.getValue());
      }
      SocketAddress remote = request.getConnectionMetaData().getRemoteSocketAddress();
      return new HttpRequest(request.getMethod(), Request.getPathInContext(request), request.getHttpURI().getQuery(),
          headers, body, remote instanceof InetSocketAddress inet ? inet : null);
    }
  }

  /** Jetty's own refusals (400, 431) as one plain line: nothing of the request is repeated. */
  private static final class PlainErrors implements Request.Handler {
    @Override
    public boolean handle(Request request, Response response, Callback callback) {
      int status = request.getAttribute(org.eclipse.jetty.server.handler.ErrorHandler.ERROR_STATUS) instanceof Integer s
          ? s : response.getStatus() >= 400 ? response.getStatus() : 500;
      response.setStatus(status);
      byte[] body = (status + " " + org.eclipse.jetty.http.HttpStatus.getMessage(status) + "\n")
          .getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/plain; charset=utf-8");
      response.getHeaders().put(HttpHeader.CONNECTION, HttpHeaderValue.CLOSE.asString());
      response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
      response.write(true, ByteBuffer.wrap(body), callback);
      return true;
    }
  }
}
