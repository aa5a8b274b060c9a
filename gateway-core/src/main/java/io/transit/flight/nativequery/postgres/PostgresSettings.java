package io.transit.flight.nativequery.postgres;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Where the shared journal lives and how the gateway talks to it. The password is read from its
 * 0600 file at start by the configuration loader and is never printed ({@link #toString()} leaves
 * it out).
 *
 * @param jdbcUrl {@code jdbc:postgresql://host:port/database}, with driver parameters if need be,
 *     but none of {@link #JOURNAL_PARAMETERS}
 * @param user the database role the gateway logs in as
 * @param password that role's password (SCRAM over the wire)
 * @param poolSize the most connections this gateway holds: one per running transaction
 * @param connectionTimeout how long a transaction waits for a pooled connection (or a new one)
 *     before it fails as {@code journal_unavailable}
 * @param lockTimeout the session's {@code lock_timeout}: the longest wait for a principal's row
 *     held by another transaction (of this gateway or another replica)
 * @param statementTimeout the session's {@code statement_timeout}
 * @param idleInTransactionTimeout the session's {@code idle_in_transaction_session_timeout}: the
 *     server ends a session that sits in an open transaction this long (a stuck replica cannot
 *     hold a principal's row lock forever)
 */
public record PostgresSettings(
    String jdbcUrl,
    String user,
    String password,
    int poolSize,
    Duration connectionTimeout,
    Duration lockTimeout,
    Duration statementTimeout,
    Duration idleInTransactionTimeout) {
  public PostgresSettings {
    Objects.requireNonNull(jdbcUrl, "jdbcUrl");
    Objects.requireNonNull(user, "user");
    Objects.requireNonNull(password, "password");
    if (!jdbcUrl.startsWith("jdbc:postgresql:")) {
      throw new IllegalArgumentException("jdbcUrl: " + jdbcUrl + " (expected: jdbc:postgresql:…)");
    }
    List<String> own = journalParameters(jdbcUrl);
    if (!own.isEmpty()) {
      throw new IllegalArgumentException("jdbcUrl: " + shown(jdbcUrl) + " sets "
          + String.join(", ", own) + " (expected: " + EXPECTED_PARAMETERS + ")");
    }
    if (poolSize < 1) {
      throw new IllegalArgumentException("poolSize: " + poolSize + " (expected: >= 1)");
    }
    for (Duration d : new Duration[] {
        connectionTimeout, lockTimeout, statementTimeout, idleInTransactionTimeout}) {
      Objects.requireNonNull(d, "timeout");
      if (d.toMillis() < 1) {
        throw new IllegalArgumentException("timeouts: " + d + " (expected: >= 1 ms)");
      }
    }
  }

  /**
   * The driver parameters the journal sets itself, on which its guarantees rest: {@code options}
   * carries the session settings ({@code synchronous_commit=on} and the lock, statement and
   * idle-in-transaction timeouts), {@code socketTimeout} bounds every read, {@code
   * connectTimeout} every connect, {@code tcpKeepAlive} notices a silent peer. The driver lets a
   * URL parameter override the data source's property of the same name, so a URL may set none
   * of them (a role's defaults, {@code ALTER ROLE … SET}, are the place for other settings).
   */
  public static final List<String> JOURNAL_PARAMETERS =
      List.of("options", "socketTimeout", "connectTimeout", "tcpKeepAlive");

  /** What a refusal of {@link #JOURNAL_PARAMETERS} says is expected. */
  public static final String EXPECTED_PARAMETERS = "no options, socketTimeout, connectTimeout"
      + " or tcpKeepAlive parameter: the journal sets them itself";

  /**
   * The names of {@link #JOURNAL_PARAMETERS} that {@code url}'s query sets, as the URL spells
   * them; matched whatever their case or percent-encoding, so nothing the driver might read as
   * one of them passes.
   */
  public static List<String> journalParameters(String url) {
    List<String> found = new ArrayList<>();
    int q = url.indexOf('?');
    if (q < 0) {
      return found;
    }
    int end = url.indexOf('#', q);
    for (String pair : url.substring(q + 1, end < 0 ? url.length() : end).split("&")) {
      int eq = pair.indexOf('=');
      String raw = eq < 0 ? pair : pair.substring(0, eq);
      String name;
      try {
        name = URLDecoder.decode(raw, StandardCharsets.UTF_8);
      } catch (IllegalArgumentException malformed) {
        name = raw;
      }
      for (String own : JOURNAL_PARAMETERS) {
        if (own.toLowerCase(Locale.ROOT).equals(name.strip().toLowerCase(Locale.ROOT))) {
          found.add(own);
        }
      }
    }
    return found;
  }

  /** The JDBC URL for {@code host:port/database}. */
  public static String url(String host, int port, String database) {
    String h = host.indexOf(':') >= 0 ? "[" + host + "]" : host;
    return "jdbc:postgresql://" + h + ":" + port + "/" + database;
  }

  /**
   * A URL as logs and messages show it: without its query string or fragment (a query may carry
   * {@code password=} or {@code sslpassword=}) and without user information before the host,
   * whatever its scheme — a refused URL is shown too, and it may be a pasted {@code
   * postgresql://user:password@host} or an object store's {@code https://key:secret@host}. An
   * {@code @} anywhere before the query counts as ending user information (a password may hold
   * one), so a path holding one is shown from after it.
   */
  public static String shown(String url) {
    int end = url.length();
    for (char c : new char[] {'?', '#'}) {
      int i = url.indexOf(c);
      if (i >= 0 && i < end) {
        end = i;
      }
    }
    String base = url.substring(0, end);
    int at = base.lastIndexOf('@');
    if (at >= 0) {
      int authority = base.indexOf("://");
      base = (authority >= 0 && authority < at ? base.substring(0, authority + 3) : "")
          + base.substring(at + 1);
    }
    return end == url.length() ? base : base + "?…";
  }

  /** Everything but the password and the URL's parameters. */
  @Override
  public String toString() {
    return "PostgresSettings[jdbcUrl=" + shown(jdbcUrl) + ", user=" + user + ", poolSize=" + poolSize
        + ", connectionTimeout=" + connectionTimeout + ", lockTimeout=" + lockTimeout
        + ", statementTimeout=" + statementTimeout + ", idleInTransactionTimeout="
        + idleInTransactionTimeout + "]";
  }
}
