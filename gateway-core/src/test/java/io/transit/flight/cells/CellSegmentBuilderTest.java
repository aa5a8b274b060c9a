package io.transit.flight.cells;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OutOfMemoryException;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;

class CellSegmentBuilderTest {
  /**
   * An allocator with room for one column of a two-column segment: the second column's refusal
   * leaves nothing charged, so the query's allocator still closes at zero bytes.
   */
  @Test
  void aColumnRefusedByTheAllocatorFreesTheColumnsBeforeIt() {
    long oneColumn;
    try (BufferAllocator measure = new RootAllocator();
        CellSegmentBuilder b = new CellSegmentBuilder(measure, List.of("a"), 4096)) {
      oneColumn = measure.getAllocatedMemory();
    }
    assertTrue(oneColumn > 0);
    try (BufferAllocator tight = new RootAllocator(oneColumn + oneColumn / 2)) {
      assertThrows(OutOfMemoryException.class,
          () -> new CellSegmentBuilder(tight, List.of("a", "b"), 4096));
      assertEquals(0, tight.getAllocatedMemory());
    }
  }
}
