package io.transit.flight.nativequery.embedded;

import io.transit.flight.diagnostic.QueryCode;
import io.transit.flight.nativequery.AccessUse;
import io.transit.flight.nativequery.PrincipalRights;
import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.TableDeclaration;
import java.util.Optional;

/**
 * The engine's source/requester checks of one principal against one published Table, read from
 * the rights current at the call: the principal is registered and may read the Table's source,
 * and the Table is published with exactly this declaration. A submit's admission ({@link
 * UploadValidator}) and the client's check before any disclosure ({@link
 * EmbeddedEngine#checkAccess}) run this one method, so the gateway discloses a schema or a
 * catalog row only where the engine would admit a statement.
 *
 * <p>Any thread: the registry is swapped whole and the publications are fixed at open.
 */
final class RequesterCheck {
  private final RightsRegistry rights;
  private final DuckTables tables;

  RequesterCheck(RightsRegistry rights, DuckTables tables) {
    this.rights = rights;
    this.tables = tables;
  }

  /**
   * Returns the principal's current rights when every check holds, with the send and inspect
   * rights too for {@link AccessUse#ADMIT}; otherwise throws {@code query.access_denied} or
   * {@code query.source_unavailable}. The access check comes first: a principal that may not
   * read the source never learns whether the Table is published.
   */
  PrincipalRights check(long principal, TableDeclaration table, AccessUse use) {
    PrincipalRights r = rights.require(principal);
    if (!r.mayRead(table.getSource())) {
      throw RightsRegistry.denied(
          "the principal may not read source " + Long.toUnsignedString(table.getSource()));
    }
    if (use == AccessUse.ADMIT && !r.canSend()) {
      throw RightsRegistry.denied("the principal may not send commands");
    }
    if (use == AccessUse.ADMIT && !r.canInspect()) {
      throw RightsRegistry.denied("the principal may not inspect queries");
    }
    Optional<Publication> pub = tables.publication(table.getObjectId());
    if (pub.isEmpty() || !pub.get().declaration().equals(table)) {
      throw QueryCode.SOURCE_UNAVAILABLE.failure("the table is not published with this declaration");
    }
    return r;
  }
}
