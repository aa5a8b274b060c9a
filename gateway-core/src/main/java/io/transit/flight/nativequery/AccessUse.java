package io.transit.flight.nativequery;

/**
 * What a caller is about to be given, for {@link NativeQueryClient#checkAccess}: it decides which
 * of the principal's current rights the engine requires besides its read right on the source.
 */
public enum AccessUse {
  /** Anything about a published Table: a catalog row, a schema, a compile diagnostic. */
  DISCLOSE,
  /**
   * A new admission: what {@link #DISCLOSE} needs, and the send right (to record the commands)
   * and the inspect right (to wait for the recorded result), so nothing is sent that the caller
   * could not see through.
   */
  ADMIT
}
