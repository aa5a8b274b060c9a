package io.transit.flight.ticket;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * Tag 2: a metadata command (GetCatalogs, GetTables…) by its original command bytes, and the
 * SHA-256 of its finite encoded result. DoGet recomputes the result under current authorization
 * and refuses it when the digest no longer matches.
 *
 * <p>The command is at most {@link Ftk1Layout#MAX_METADATA_COMMAND_BYTES} bytes (1019): the
 * profile allows 1024, but the 1263-byte ticket maximum is reached first. Immutable: both
 * arrays are copied in and out.
 *
 * @param command the original command bytes, as the client sent them
 * @param resultSha256 SHA-256 of the finite encoded result (32 bytes)
 */
public record MetadataReference(byte[] command, byte[] resultSha256) implements TicketReference {

  public static final int TAG = 2;

  public MetadataReference {
    if (command == null) {
      throw new IllegalArgumentException("command: null (expected: bytes)");
    }
    if (command.length > Ftk1Layout.MAX_METADATA_COMMAND_BYTES) {
      throw new IllegalArgumentException(
          "command: "
              + command.length
              + " bytes (expected: <= "
              + Ftk1Layout.MAX_METADATA_COMMAND_BYTES
              + " so the ticket fits "
              + Ftk1Layout.MAX_TICKET_BYTES
              + " bytes)");
    }
    command = command.clone();
    resultSha256 = Ftk1Layout.digestCopy("resultSha256", resultSha256);
  }

  @Override
  public byte[] command() {
    return command.clone();
  }

  @Override
  public byte[] resultSha256() {
    return resultSha256.clone();
  }

  /** Command length without copying it. */
  public int commandLength() {
    return command.length;
  }

  @Override
  public int tag() {
    return TAG;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof MetadataReference other
        && Arrays.equals(command, other.command)
        && Arrays.equals(resultSha256, other.resultSha256);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(command) + Arrays.hashCode(resultSha256);
  }

  @Override
  public String toString() {
    return "MetadataReference[commandBytes="
        + command.length
        + ", resultSha256="
        + HexFormat.of().formatHex(resultSha256)
        + "]";
  }
}
