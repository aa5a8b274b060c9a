package io.transit.flight.nativequery;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * Which engine build compiles and runs statements: half of a statement's frozen basis ({@link
 * io.transit.flight.diagnostic.Basis}), next to the declaration it was compiled against. Immutable;
 * any thread.
 *
 * @param name the engine's identifier, e.g. {@code transit-embedded}
 * @param version the engine's build version
 */
public record EngineIdentity(String name, String version) {
  private static final Pattern TOKEN = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._+-]{0,63}");

  /** The version of classes not loaded from a packaged jar (a development build's classes). */
  public static final String UNPACKAGED = "unpackaged";

  public EngineIdentity {
    if (name == null || !TOKEN.matcher(name).matches()
        || version == null || !TOKEN.matcher(version).matches()) {
      throw new IllegalArgumentException("engine identity " + name + " " + version
          + " (expected: tokens [A-Za-z0-9][A-Za-z0-9._+-]{0,63})");
    }
  }

  /**
   * The identity named {@code name} whose version is the Maven version of the jar {@code anchor}
   * was loaded from ({@code pom.properties} of {@code group:artifact}), or {@link #UNPACKAGED}
   * when the classes come from no packaged jar, so the basis never names a version it was not
   * built as.
   */
  public static EngineIdentity ofBuild(String name, Class<?> anchor, String group, String artifact) {
    String resource = "/META-INF/maven/" + group + "/" + artifact + "/pom.properties";
    try (InputStream in = anchor.getResourceAsStream(resource)) {
      if (in != null) {
        Properties p = new Properties();
        p.load(in);
        String v = p.getProperty("version");
        if (v != null && TOKEN.matcher(v).matches()) {
          return new EngineIdentity(name, v);
        }
      }
    } catch (IOException e) {
      // An unreadable resource is no version: fall through.
    }
    return new EngineIdentity(name, UNPACKAGED);
  }
}
