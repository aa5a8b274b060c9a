package io.transit.flight.nativequery.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.transit.flight.diagnostic.GatewayException;
import io.transit.flight.query.LogicalType;
import io.transit.flight.query.QueryPlan;
import io.transit.flight.query.QueryPlan.Literal;
import java.util.List;
import org.junit.jupiter.api.Test;

class PlanTranslatorTest {
  @Test
  void literalsAreBoundAndIdentifiersQuoted() {
    QueryPlan plan = new QueryPlan(
        List.of(new QueryPlan.Output("x", true, QueryPlan.OutputKind.COLUMN, "we\"ird",
            LogicalType.INT64)),
        new QueryPlan.Or(
            new QueryPlan.InList("region", List.of(new Literal(LogicalType.UTF8, "'; DROP x")),
                true),
            new QueryPlan.Not(new QueryPlan.Between("id", new Literal(LogicalType.INT64, 1L),
                new Literal(LogicalType.INT64, 2L), false))),
        10L, false);
    PlanTranslator.Translated t = PlanTranslator.translate(plan, "read_parquet(['/d/t.parquet'])");
    assertEquals("SELECT \"we\"\"ird\" FROM read_parquet(['/d/t.parquet']) WHERE (\"region\" NOT IN"
        + " (CAST(? AS VARCHAR)) OR (NOT (\"id\" BETWEEN CAST(? AS BIGINT) AND"
        + " CAST(? AS BIGINT)))) LIMIT 10", t.sql());
    assertEquals(3, t.parameters().size());
  }

  /**
   * A projection's IN list of five or more literals goes as lists of at most four, which DuckDB
   * keeps as comparisons (a longer one it turns into a join, which loses file order); an
   * aggregate's goes whole.
   */
  @Test
  void aProjectionsLongInListIsSplitSoItsRowsKeepFileOrder() {
    List<Literal> six = java.util.stream.LongStream.rangeClosed(1, 6)
        .mapToObj(v -> new Literal(LogicalType.INT64, v)).toList();
    String p = "CAST(? AS BIGINT)";
    for (boolean negated : new boolean[] {false, true}) {
      QueryPlan.Filter in = new QueryPlan.InList("id", six, negated);
      String op = negated ? " NOT IN (" : " IN (";
      PlanTranslator.Translated projection = PlanTranslator.translate(new QueryPlan(
          List.of(new QueryPlan.Output("id", false, QueryPlan.OutputKind.COLUMN, "id",
              LogicalType.INT64)), in, null, false), "t");
      assertEquals("SELECT \"id\" FROM t WHERE (\"id\"" + op + String.join(", ", p, p, p, p)
          + ")" + (negated ? " AND " : " OR ") + "\"id\"" + op + p + ", " + p + "))",
          projection.sql());
      assertEquals(6, projection.parameters().size());
      PlanTranslator.Translated count = PlanTranslator.translate(new QueryPlan(
          List.of(new QueryPlan.Output("n", false, QueryPlan.OutputKind.COUNT_STAR, null, null)),
          in, null, true), "t");
      assertEquals("SELECT COUNT(*) FROM t WHERE \"id\"" + op
          + String.join(", ", java.util.Collections.nCopies(6, p)) + ")", count.sql());
    }
  }

  @Test
  void planThatDoesNotFitTheDeclarationIsInvalid() {
    var table = DemoData.declaration(DemoData.MIXED, 2);
    QueryPlan sumOfText = new QueryPlan(List.of(new QueryPlan.Output("s", true,
        QueryPlan.OutputKind.SUM, "region", LogicalType.UTF8)), null, null, true);
    GatewayException e = assertThrows(GatewayException.class,
        () -> PlanTranslator.validate(sumOfText, table));
    assertEquals("query.invalid_plan", e.code());
    QueryPlan wrongLiteral = new QueryPlan(List.of(new QueryPlan.Output("n", false,
        QueryPlan.OutputKind.COUNT_STAR, null, null)),
        new QueryPlan.Comparison("price", QueryPlan.Op.GT, new Literal(LogicalType.INT64, 1L)),
        null, true);
    assertThrows(GatewayException.class, () -> PlanTranslator.validate(wrongLiteral, table));
  }
}
