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
    PlanTranslator.Translated t = PlanTranslator.translate(plan,
        new DuckTables.Scan("read_parquet(['/d/t.parquet'])", true));
    assertEquals("SELECT \"we\"\"ird\" FROM read_parquet(['/d/t.parquet']) WHERE (\"region\" NOT IN"
        + " (CAST(? AS VARCHAR)) OR (NOT (\"id\" BETWEEN CAST(? AS BIGINT) AND"
        + " CAST(? AS BIGINT)))) LIMIT 10", t.sql());
    assertEquals(3, t.parameters().size());
  }

  /**
   * A projection with an IN or NOT IN list of five or more literals, which DuckDB may turn into a
   * join that loses file order, is ordered by the scan's file position; where a file column hides
   * that position, its lists go as lists of at most four, which DuckDB keeps as comparisons. An
   * aggregate's order does not matter.
   */
  @Test
  void aProjectionsLongInListIsOrderedByFilePositionOrSplit() {
    List<Literal> six = java.util.stream.LongStream.rangeClosed(1, 6)
        .mapToObj(v -> new Literal(LogicalType.INT64, v)).toList();
    String p = "CAST(? AS BIGINT)";
    String whole = String.join(", ", java.util.Collections.nCopies(6, p));
    DuckTables.Scan positions = new DuckTables.Scan("t", true);
    DuckTables.Scan hidden = new DuckTables.Scan("t", false);
    for (boolean negated : new boolean[] {false, true}) {
      QueryPlan.Filter in = new QueryPlan.InList("id", six, negated);
      String op = negated ? " NOT IN (" : " IN (";
      PlanTranslator.Translated ordered = PlanTranslator.translate(projection(in, 3L), positions);
      assertEquals("SELECT \"id\" FROM t WHERE \"id\"" + op + whole + ")"
          + " ORDER BY file_index, file_row_number LIMIT 3", ordered.sql());
      assertEquals(6, ordered.parameters().size());
      PlanTranslator.Translated split = PlanTranslator.translate(projection(in, null), hidden);
      assertEquals("SELECT \"id\" FROM t WHERE (\"id\"" + op + String.join(", ", p, p, p, p)
          + ")" + (negated ? " AND " : " OR ") + "\"id\"" + op + p + ", " + p + "))",
          split.sql());
      PlanTranslator.Translated not = PlanTranslator.translate(
          projection(new QueryPlan.Not(in), null), positions);
      assertEquals("SELECT \"id\" FROM t WHERE (NOT \"id\"" + op + whole + "))"
          + " ORDER BY file_index, file_row_number", not.sql());
      PlanTranslator.Translated count = PlanTranslator.translate(new QueryPlan(
          List.of(new QueryPlan.Output("n", false, QueryPlan.OutputKind.COUNT_STAR, null, null)),
          in, null, true), positions);
      assertEquals("SELECT COUNT(*) FROM t WHERE \"id\"" + op + whole + ")", count.sql());
    }
    QueryPlan.Filter four = new QueryPlan.InList("id", six.subList(0, 4), false);
    assertEquals("SELECT \"id\" FROM t WHERE \"id\" IN (" + String.join(", ", p, p, p, p) + ")",
        PlanTranslator.translate(projection(four, null), positions).sql());
  }

  private static QueryPlan projection(QueryPlan.Filter filter, Long limit) {
    return new QueryPlan(List.of(new QueryPlan.Output("id", false, QueryPlan.OutputKind.COLUMN,
        "id", LogicalType.INT64)), filter, limit, false);
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
