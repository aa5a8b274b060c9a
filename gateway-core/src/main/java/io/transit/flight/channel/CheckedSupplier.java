package io.transit.flight.channel;

/**
 * A supplier that may throw. The channel uses it for a batch's optional Flight
 * {@code app_metadata}: it is invoked on T_exec before any root is mutated, so a failure to
 * build the metadata adopts no stream root and still frees the batch's source root.
 *
 * @param <T> the supplied value
 */
@FunctionalInterface
public interface CheckedSupplier<T> {
  /** Returns the value, or {@code null} when there is none. */
  T get() throws Exception;
}
