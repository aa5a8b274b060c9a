package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.transit.flight.nativequery.Publication;
import io.transit.flight.proto.TableDeclaration;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** check-config's entry point: the engine's own publication check, without a state directory. */
class PublicationCheckTest {
  @TempDir static Path data;
  private static List<Publication> demo;

  @BeforeAll
  static void demo() throws Exception {
    demo = DemoData.generate(data);
  }

  private static long scratchDirs() throws IOException {
    try (Stream<Path> s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      return s.filter(p -> p.getFileName().toString().startsWith("transit-check-")).count();
    }
  }

  @Test
  void matchingPublicationsPassAndLeaveNothingBehind() throws Exception {
    long before = scratchDirs();
    PublicationCheck.check(demo, DuckSettings.defaults());
    assertEquals(before, scratchDirs());
  }

  @Test
  void aColumnTypeOrAnExtraColumnIsRefusedNamingColumnAndFile() throws Exception {
    Publication cells = demo.get(2);
    TableDeclaration d = cells.declaration();
    TableDeclaration retyped = d.toBuilder()
        .setColumns(4, d.getColumns(4).toBuilder().setLogicalType("UTF8")).build();
    String file = cells.files().get(0).getFileName().toString();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () ->
        PublicationCheck.check(List.of(cells.withDeclaration(retyped)), DuckSettings.defaults()));
    assertTrue(e.getMessage().contains("huge") && e.getMessage().contains(file), e.getMessage());
    TableDeclaration extra = d.toBuilder()
        .addColumns(d.getColumns(0).toBuilder().setName("ghost")).build();
    IllegalArgumentException ghost = assertThrows(IllegalArgumentException.class, () ->
        PublicationCheck.check(List.of(cells.withDeclaration(extra)), DuckSettings.defaults()));
    assertTrue(ghost.getMessage().contains("ghost") && ghost.getMessage().contains(file),
        ghost.getMessage());
  }

  @Test
  void aMissingFileIsRefusedNamingIt() {
    Publication cells = demo.get(2);
    Path gone = data.resolve("gone.parquet");
    IOException e = assertThrows(IOException.class, () -> PublicationCheck.check(
        List.of(new Publication(cells.declaration(), List.of(gone), "parquet")),
        DuckSettings.defaults()));
    assertTrue(e.getMessage().contains("gone.parquet"), e.getMessage());
  }
}
