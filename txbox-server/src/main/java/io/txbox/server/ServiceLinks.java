package io.txbox.server;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The variables Kubernetes puts in every pod of a namespace for each Service there (its "service
 * links"), told apart from txbox's settings. A Service named {@code txbox-relay} gives every pod
 * {@code TXBOX_RELAY_SERVICE_HOST}, {@code TXBOX_RELAY_PORT=tcp://10.96.0.17:9464} and more, which
 * look like {@code TXBOX_*} settings; one named {@code txbox-http} even gives {@code TXBOX_HTTP_PORT},
 * the name of a setting. A variable is taken for a link only when its family's
 * {@code <NAME>_SERVICE_HOST} is there too and it has a link's shape, and, for {@code <NAME>_PORT}
 * and {@code <NAME>_PORT_<n>_<PROTO>}, a link's value ({@code tcp://...}): a setting written in the
 * pod's own spec, which Kubernetes lets win over the link, is still read.
 *
 * <pre>{@code
 * Map<String, String> settings = ServiceLinks.without(System.getenv());
 * }</pre>
 */
final class ServiceLinks {
  private static final String HOST = "_SERVICE_HOST";
  private static final Pattern URL = Pattern.compile("(tcp|udp|sctp)://\\S+");

  private ServiceLinks() {}

  /** {@code environment} without the {@code TXBOX*} variables that are service links. */
  static Map<String, String> without(Map<String, String> environment) {
    Set<String> services = environment.keySet().stream()
        .filter(v -> v.startsWith("TXBOX") && v.endsWith(HOST))
        .map(v -> v.substring(0, v.length() - HOST.length()))
        .collect(Collectors.toSet());
    Map<String, String> kept = new LinkedHashMap<>();
    environment.forEach((name, value) -> {
      if (services.stream().noneMatch(service -> isLink(service, name, value))) {
        kept.put(name, value);
      }
    });
    return kept;
  }

  private static boolean isLink(String service, String name, String value) {
    if (!name.startsWith(service + "_")) {
      return false;
    }
    String rest = name.substring(service.length());
    if (rest.equals(HOST) || rest.matches("_SERVICE_PORT(_[A-Z0-9_]+)?")) {
      return true;
    }
    if (rest.equals("_PORT") || rest.matches("_PORT_\\d+_(TCP|UDP|SCTP)")) {
      return URL.matcher(value).matches();
    }
    return rest.matches("_PORT_\\d+_(TCP|UDP|SCTP)_(PROTO|PORT|ADDR)");
  }
}
