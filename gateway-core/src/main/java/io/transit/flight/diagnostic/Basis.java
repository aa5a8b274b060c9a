package io.transit.flight.diagnostic;

import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * The frozen basis of a statement ({@code docs/diagnostic-v1.md}, "Shared-contract terms"): the
 * publication declaration it was compiled against and the engine that compiled it. The same SQL
 * over the same basis compiles to the same plan, so this is what a caller compares to tell a
 * refusal of its statement from a refusal caused by a changed publication or engine. Written in
 * full or not at all: shortening never touches it. Access-class failures never carry one.
 *
 * @param declarationSha256 lowercase hex of the Table declaration fingerprint (32 bytes), the
 *     value FTK1 tickets, request bundles and result manifests carry
 * @param engine the engine's identifier (e.g. {@code transit-embedded})
 * @param engineVersion the engine build that compiled the statement
 */
public record Basis(String declarationSha256, String engine, String engineVersion) {
  private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
  /** Engine identifiers and versions: short tokens chosen by code, never caller input. */
  private static final Pattern TOKEN = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._+-]{0,63}");

  public Basis {
    if (declarationSha256 == null || !SHA256.matcher(declarationSha256).matches()) {
      throw new IllegalArgumentException("declaration_sha256 (expected: 32 bytes lowercase hex)");
    }
    if (engine == null || !TOKEN.matcher(engine).matches()
        || engineVersion == null || !TOKEN.matcher(engineVersion).matches()) {
      throw new IllegalArgumentException("engine " + engine + " " + engineVersion
          + " (expected: tokens [A-Za-z0-9][A-Za-z0-9._+-]{0,63})");
    }
  }

  /** The basis of a declaration fingerprint and an engine. */
  public static Basis of(byte[] declarationSha256, String engine, String engineVersion) {
    if (declarationSha256 == null || declarationSha256.length != 32) {
      throw new IllegalArgumentException("declaration fingerprint (expected: 32 bytes)");
    }
    return new Basis(HexFormat.of().formatHex(declarationSha256), engine, engineVersion);
  }
}
