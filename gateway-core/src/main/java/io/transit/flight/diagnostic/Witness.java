package io.transit.flight.diagnostic;

import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * The original runtime witness of a failure ({@code docs/diagnostic-v1.md}, "Shared-contract
 * terms"): what the component that first refused the statement recorded, kept apart from the
 * envelope's {@code code} and {@code stage}, which a later presentation may restate. Written in
 * full or not at all: shortening never touches it. Access-class failures never carry one.
 *
 * @param source who witnessed the failure
 * @param stage the stage the witness names, or null when it named none the gateway knows
 * @param code the witness's own code as recorded, or null when the record holds no valid code
 * @param nativeSequence the native sequence of a rejected command, or null
 * @param correlation the native correlation of a failed saved query, or null
 * @param commandSha256 lowercase hex SHA-256 of the rejected command as recorded, or null
 */
public record Witness(
    Source source, Stage stage, String code, Long nativeSequence, Long correlation,
    String commandSha256) {
  private static final Pattern CODE = Pattern.compile("[a-z][a-z0-9_]*(\\.[a-z0-9_]+)+");
  private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");

  /** Who witnessed the failure; written as {@code source}. */
  public enum Source {
    /** The engine's compiler refused the statement (nothing native was recorded for it). */
    COMPILER("compiler"),
    /** The native journal recorded a definitive rejection of one command. */
    NATIVE_REJECTION("native_rejection"),
    /** The native journal recorded the terminal failure of an accepted (saved) query. */
    NATIVE_FAILURE("native_failure");

    private final String wireName;

    Source(String wireName) {
      this.wireName = wireName;
    }

    public String wireName() {
      return wireName;
    }
  }

  public Witness {
    if (source == null) {
      throw new IllegalArgumentException("witness source is required");
    }
    if (code != null && (code.length() > Diagnostic.MAX_CODE_LENGTH || !CODE.matcher(code).matches())) {
      throw new IllegalArgumentException("witness code: " + code + " (expected: a diagnostic code)");
    }
    if (commandSha256 != null && !SHA256.matcher(commandSha256).matches()) {
      throw new IllegalArgumentException("witness command_sha256 (expected: 32 bytes lowercase hex)");
    }
  }

  /** The compiler's own refusal of a statement. */
  public static Witness compiler(String code) {
    return new Witness(Source.COMPILER, Stage.COMPILATION, validOrNull(code), null, null, null);
  }

  /**
   * A recorded rejection of the command at {@code sequence}; {@code code} as the journal holds it
   * (left out when it is not a valid code), {@code commandSha256} the recorded command's digest
   * (left out unless 32 bytes).
   */
  public static Witness nativeRejection(String code, long sequence, byte[] commandSha256) {
    return new Witness(Source.NATIVE_REJECTION, Stage.ADMISSION, validOrNull(code), sequence, null,
        commandSha256 != null && commandSha256.length == 32
            ? HexFormat.of().formatHex(commandSha256) : null);
  }

  /** A saved query's recorded terminal failure; the stage as recorded (null if unknown). */
  public static Witness nativeFailure(String code, String stage, long correlation) {
    return new Witness(Source.NATIVE_FAILURE, Stage.fromWireName(stage, null), validOrNull(code),
        null, correlation, null);
  }

  private static String validOrNull(String code) {
    return code != null && code.length() <= Diagnostic.MAX_CODE_LENGTH
        && CODE.matcher(code).matches() ? code : null;
  }
}
