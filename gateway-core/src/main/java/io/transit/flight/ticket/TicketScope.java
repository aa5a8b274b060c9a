package io.transit.flight.ticket;

/**
 * The eight u64 scope fields and the selected role that an FTK1 ticket binds, in ticket order.
 * Values are raw 64-bit identifiers from config (compared bit for bit, so an id above
 * {@code Long.MAX_VALUE} is simply a negative {@code long} here).
 *
 * <p>A ticket verifies only against the caller's <em>current</em> scope: the server builds this
 * record from the authenticated caller's binding on every call, never from the ticket.
 *
 * @param realm the deployment
 * @param principal the caller's native principal
 * @param service this gateway service, the intended recipient
 * @param bindingRevision bumped whenever the caller's binding changes
 * @param ingress the listener the caller came through
 * @param requests the binding's published query scope
 * @param source the native source holding the published Table's data
 * @param resource the published Table's object id
 * @param hasRole whether a role is selected
 * @param role the selected role id; must be 0 when {@code hasRole} is false
 */
public record TicketScope(
    long realm,
    long principal,
    long service,
    long bindingRevision,
    long ingress,
    long requests,
    long source,
    long resource,
    boolean hasRole,
    long role) {

  public TicketScope {
    if (!hasRole && role != 0) {
      throw new IllegalArgumentException(
          "role: " + Long.toUnsignedString(role) + " (expected: 0 when no role is selected)");
    }
  }

  /** The same scope with no selected role. */
  public static TicketScope withoutRole(
      long realm,
      long principal,
      long service,
      long bindingRevision,
      long ingress,
      long requests,
      long source,
      long resource) {
    return new TicketScope(
        realm, principal, service, bindingRevision, ingress, requests, source, resource, false, 0);
  }

  /**
   * The name of the first field (in ticket order) that differs from {@code other}, or null when
   * the two scopes are equal. Names only, never values, so it is safe to disclose.
   */
  String firstMismatch(TicketScope other) {
    if (realm != other.realm) {
      return "realm";
    }
    if (principal != other.principal) {
      return "principal";
    }
    if (service != other.service) {
      return "service";
    }
    if (bindingRevision != other.bindingRevision) {
      return "binding_revision";
    }
    if (ingress != other.ingress) {
      return "ingress";
    }
    if (requests != other.requests) {
      return "requests";
    }
    if (source != other.source) {
      return "source";
    }
    if (resource != other.resource) {
      return "resource";
    }
    if (hasRole != other.hasRole || role != other.role) {
      return "role";
    }
    return null;
  }
}
