package io.transit.flight.catalog;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Any;
import io.transit.flight.diagnostic.Cause;
import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.proto.ColumnDeclaration;
import io.transit.flight.proto.TableDeclaration;
import java.io.ByteArrayInputStream;
import java.nio.channels.Channels;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.arrow.flight.sql.FlightSqlProducer.Schemas;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandGetCatalogs;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandGetDbSchemas;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandGetSqlInfo;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandGetTableTypes;
import org.apache.arrow.flight.sql.impl.FlightSql.CommandGetTables;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class CatalogResultsTest {
  private final BufferAllocator allocator = new RootAllocator();
  private final CatalogResults catalog = new CatalogResults(new SqlInfoCatalog("0.1.0", "18.3.0"));

  private static final TableDeclaration PRIMITIVE = table("p", "INT64", "INT64");
  private static final TableDeclaration MIXED = table("m", "INT64", "UTF8");

  @AfterEach
  void noLeaks() {
    assertEquals(0, allocator.getAllocatedMemory());
    allocator.close();
  }

  static TableDeclaration table(String name, String... types) {
    TableDeclaration.Builder b = TableDeclaration.newBuilder().setCatalog("cat").setDbSchema("sch")
        .setTable(name).setOwner("o").setObjectId(1).setMetadataRef("m").setSource(2);
    for (int i = 0; i < types.length; i++) {
      b.addColumns(ColumnDeclaration.newBuilder().setName("c" + i).setLogicalType(types[i]).setNullable(i > 0));
    }
    return b.build();
  }

  private VectorSchemaRoot result(Any command, TableDeclaration t) {
    return IpcBytes.read(catalog.encode(command, t, allocator), allocator);
  }

  @Test
  void theArrowVersionReportedIsTheLoadedJars() {
    // The jar Flight was loaded from is named flight-core-<version>.jar (Maven's layout).
    String jar = org.apache.arrow.flight.FlightServer.class.getProtectionDomain().getCodeSource()
        .getLocation().getPath();
    String version = SqlInfoCatalog.runningArrowVersion();
    assertTrue(version.matches("\\d+\\.\\d+\\.\\d+"), version);
    assertTrue(jar.endsWith("flight-core-" + version + ".jar"), jar + " vs " + version);
  }

  /** A Table the caller may not see: no catalog, schema or table row; the gateway's own rows stay. */
  @Test
  void aTableTheCallerMayNotSeeIsNotListed() {
    for (Any command : List.of(Any.pack(CommandGetCatalogs.getDefaultInstance()),
        Any.pack(CommandGetDbSchemas.getDefaultInstance()),
        Any.pack(CommandGetTables.getDefaultInstance()),
        Any.pack(CommandGetTables.newBuilder().setIncludeSchema(true).build()))) {
      try (VectorSchemaRoot r =
          IpcBytes.read(catalog.encode(command, Optional.empty(), allocator), allocator)) {
        assertEquals(CatalogResults.schemaOf(command), r.getSchema());
        assertEquals(0, r.getRowCount(), command.getTypeUrl());
      }
    }
    try (VectorSchemaRoot r = IpcBytes.read(catalog.encode(
        Any.pack(CommandGetTableTypes.getDefaultInstance()), Optional.empty(), allocator),
        allocator)) {
      assertEquals(1, r.getRowCount());
    }
  }

  @Test
  void catalogsSchemasAndTypesShowOnlyTheBoundTable() {
    try (VectorSchemaRoot r = result(Any.pack(CommandGetCatalogs.getDefaultInstance()), PRIMITIVE)) {
      assertEquals(Schemas.GET_CATALOGS_SCHEMA, r.getSchema());
      assertEquals("cat", r.getVector(0).getObject(0).toString());
      assertEquals(1, r.getRowCount());
    }
    try (VectorSchemaRoot r = result(Any.pack(CommandGetDbSchemas.newBuilder()
        .setDbSchemaFilterPattern("s_h").build()), PRIMITIVE)) {
      assertEquals(Schemas.GET_SCHEMAS_SCHEMA, r.getSchema());
      assertEquals(1, r.getRowCount());
    }
    try (VectorSchemaRoot r = result(Any.pack(CommandGetDbSchemas.newBuilder()
        .setCatalog("other").build()), PRIMITIVE)) {
      assertEquals(0, r.getRowCount());
    }
    try (VectorSchemaRoot r = result(Any.pack(CommandGetTableTypes.getDefaultInstance()), PRIMITIVE)) {
      assertEquals("TABLE", r.getVector(0).getObject(0).toString());
    }
  }

  @Test
  void tablesWithSchemaRequireThePrimitiveProfile() throws Exception {
    Any withSchema = Any.pack(CommandGetTables.newBuilder().setIncludeSchema(true).build());
    try (VectorSchemaRoot r = result(withSchema, PRIMITIVE)) {
      assertEquals(Schemas.GET_TABLES_SCHEMA, r.getSchema());
      byte[] schemaBytes = ((VarBinaryVector) r.getVector("table_schema")).get(0);
      Schema s = MessageSerializer.deserializeSchema(
          new ReadChannel(Channels.newChannel(new ByteArrayInputStream(schemaBytes))));
      assertEquals(List.of("c0", "c1"), s.getFields().stream().map(f -> f.getName()).toList());
      assertFalse(s.getFields().get(0).isNullable());
    }
    TableDeclaration wide = table("w", java.util.Collections.nCopies(129, "INT64")
        .toArray(String[]::new));
    for (TableDeclaration outside : List.of(MIXED, table("u", "INT64", "UINT64"), wide)) {
      // A uint64 column is never advertised as int64: it cannot be projected (issue 15); nor is
      // a Table wider than a statement may project.
      GatewayException e = assertThrows(GatewayException.class,
          () -> catalog.encode(withSchema, outside, allocator));
      assertEquals(Cause.UNSUPPORTED, e.kind());
      assertEquals("catalog.not_primitive", e.code());
    }
    try (VectorSchemaRoot r = result(Any.pack(CommandGetTables.getDefaultInstance()), MIXED)) {
      assertEquals(Schemas.GET_TABLES_SCHEMA_NO_SCHEMA, r.getSchema());
      assertEquals(1, r.getRowCount());
    }
    try (VectorSchemaRoot r = result(Any.pack(CommandGetTables.newBuilder()
        .addTableTypes("VIEW").build()), PRIMITIVE)) {
      assertEquals(0, r.getRowCount());
    }
  }

  @Test
  void resultsAreDeterministicBytes() {
    Any c = Any.pack(CommandGetTables.newBuilder().setIncludeSchema(true).build());
    assertArrayEquals(catalog.encode(c, PRIMITIVE, allocator), catalog.encode(c, PRIMITIVE, allocator));
    Any info = Any.pack(CommandGetSqlInfo.getDefaultInstance());
    assertArrayEquals(catalog.encode(info, PRIMITIVE, allocator), catalog.encode(info, PRIMITIVE, allocator));
  }

  @Test
  void sqlInfoAnswersExactlyWhatWasAskedOrFails() {
    try (VectorSchemaRoot r = result(Any.pack(CommandGetSqlInfo.newBuilder().addInfo(0).addInfo(8).build()),
        PRIMITIVE)) {
      assertEquals(Schemas.GET_SQL_INFO_SCHEMA, r.getSchema());
      assertEquals(2, r.getRowCount());
    }
    try (VectorSchemaRoot r = result(Any.pack(CommandGetSqlInfo.getDefaultInstance()), PRIMITIVE)) {
      assertEquals(SqlInfoCatalog.SUPPORTED.size(), r.getRowCount());
    }
    GatewayException e = assertThrows(GatewayException.class, () -> catalog.encode(
        Any.pack(CommandGetSqlInfo.newBuilder().addInfo(0).addInfo(500).build()), PRIMITIVE, allocator));
    assertEquals(Cause.UNSUPPORTED, e.kind());
    assertTrue(e.getMessage().contains("500"));
    // uint32 on the wire: an id past 2^31 is named as sent, not as Java's negative int.
    GatewayException high = assertThrows(GatewayException.class, () -> catalog.encode(
        Any.pack(CommandGetSqlInfo.newBuilder().addInfo(-1).build()), PRIMITIVE, allocator));
    assertTrue(high.getMessage().contains("SqlInfo id 4294967295 "), high.getMessage());
    assertEquals(4294967295L, high.facts().get("info_id"));
  }

  /** Without Substrait, FlightSql.proto defines its version ids (6, 7) as null strings. */
  @Test
  void theSubstraitVersionsAreNullStrings() {
    try (VectorSchemaRoot r = result(Any.pack(CommandGetSqlInfo.newBuilder().addInfo(0).addInfo(6)
        .addInfo(7).build()), PRIMITIVE)) {
      assertEquals(3, r.getRowCount());
      org.apache.arrow.vector.complex.DenseUnionVector values =
          (org.apache.arrow.vector.complex.DenseUnionVector) r.getVector(1);
      assertEquals("Transit Flight Gateway", String.valueOf(values.getObject(0)));
      for (int row = 1; row < 3; row++) {
        assertEquals(0, values.getTypeId(row), "string_value");
        assertTrue(values.getVectorByType((byte) 0).isNull(values.getOffset(row)), "row " + row);
      }
    }
  }

  /** GetFlightInfo's count from the batch header equals the decoded result's, for every shape. */
  @Test
  void theHeaderRowCountIsTheDecodedRowCount() {
    List<Any> commands = List.of(
        Any.pack(CommandGetCatalogs.getDefaultInstance()),
        Any.pack(CommandGetTableTypes.getDefaultInstance()),
        Any.pack(CommandGetTables.newBuilder().setIncludeSchema(true).build()),
        Any.pack(CommandGetTables.newBuilder().setTableNameFilterPattern("nomatch").build()),
        Any.pack(CommandGetSqlInfo.newBuilder().addInfo(0).addInfo(8).build()),
        Any.pack(CommandGetSqlInfo.getDefaultInstance()));
    for (Any c : commands) {
      byte[] bytes = catalog.encode(c, PRIMITIVE, allocator);
      try (VectorSchemaRoot r = IpcBytes.read(bytes, allocator)) {
        assertEquals(r.getRowCount(), IpcBytes.rowCount(bytes), c.getTypeUrl());
      }
    }
    GatewayException e = assertThrows(GatewayException.class,
        () -> IpcBytes.rowCount(new byte[] {1, 2, 3}));
    assertEquals(Cause.EVIDENCE, e.kind());
  }

  @Test
  void likePatterns() {
    assertTrue(CatalogResults.likeMatches(true, "p%", "primitive"));
    assertTrue(CatalogResults.likeMatches(true, "pr_mitive", "primitive"));
    assertFalse(CatalogResults.likeMatches(true, "p\\%", "primitive"));
    assertTrue(CatalogResults.likeMatches(true, "a\\_b", "a_b"));
    assertFalse(CatalogResults.likeMatches(true, "a\\_b", "axb"));
    assertTrue(CatalogResults.likeMatches(false, "zzz", "anything"));
    assertFalse(CatalogResults.likeMatches(true, "(.*)", "x"));
    assertTrue(CatalogResults.likeMatches(true, "%", ""));
    assertFalse(CatalogResults.likeMatches(true, "_", ""));
    assertTrue(CatalogResults.likeMatches(true, "a%b%c", "aXXbYbc"));
    assertFalse(CatalogResults.likeMatches(true, "a%b%c", "aXXbYbcd"));
    assertTrue(CatalogResults.likeMatches(true, "t\u00e9_%", "t\u00e9\ud83d\ude00"),
        "_ is one code point");
    assertTrue(CatalogResults.likeMatches(true, "x\\", "x\\"), "a trailing escape is itself");
  }

  /** Every pattern over {a, b, %, _} up to 5 long against every value over {a, b} up to 6. */
  @Test
  void likePatternsAgreeWithTheirDefinitionExhaustively() {
    List<String> patterns = words("ab%_", 5);
    List<String> values = words("ab", 6);
    for (String pattern : patterns) {
      for (String value : values) {
        assertEquals(likeByDefinition(pattern, 0, value, 0),
            CatalogResults.likeMatches(true, pattern, value), pattern + " ~ " + value);
      }
    }
  }

  /**
   * The catalog calls' filters are the caller's: a pattern of 900 {@code %}s that cannot match
   * (a regular expression's backtracking would take longer than the universe) is answered in
   * pattern × value steps.
   */
  @Test
  void aPatternOfManyWildcardsIsDecidedInBoundedTime() {
    String hostile = "%".repeat(900) + "#";
    assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
      assertFalse(CatalogResults.likeMatches(true, hostile, "public"));
      assertFalse(CatalogResults.likeMatches(true, "%a".repeat(450) + "#", "a".repeat(1000)));
      assertTrue(CatalogResults.likeMatches(true, "%a".repeat(450), "a".repeat(1000)));
    });
  }

  private static List<String> words(String alphabet, int maxLength) {
    List<String> out = new ArrayList<>(List.of(""));
    for (int i = 0; i < out.size(); i++) {
      if (out.get(i).length() < maxLength) {
        for (char ch : alphabet.toCharArray()) {
          out.add(out.get(i) + ch);
        }
      }
    }
    return out;
  }

  private static boolean likeByDefinition(String p, int i, String v, int j) {
    if (i == p.length()) {
      return j == v.length();
    }
    char ch = p.charAt(i);
    if (ch == '%') {
      for (int k = j; k <= v.length(); k++) {
        if (likeByDefinition(p, i + 1, v, k)) {
          return true;
        }
      }
      return false;
    }
    return j < v.length() && (ch == '_' || ch == v.charAt(j))
        && likeByDefinition(p, i + 1, v, j + 1);
  }
}
