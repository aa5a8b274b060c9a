/**
 * Catalog metadata: {@link io.transit.flight.catalog.CatalogResults} computes the finite results
 * of GetCatalogs, GetDbSchemas, GetTables, GetTableTypes and (through {@link
 * io.transit.flight.catalog.SqlInfoCatalog}) GetSqlInfo, encoded by {@link
 * io.transit.flight.catalog.IpcBytes} as one-batch Arrow IPC streams whose SHA-256 metadata
 * tickets carry. Stateless and thread-safe; roots passed in stay the caller's, roots returned
 * become the caller's.
 */
package io.transit.flight.catalog;
