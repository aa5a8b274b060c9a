package io.transit.flight.server.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.grpc.Context;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * An admission outcome, told through the {@link AdmissionRecorder} inside the call's Context,
 * reaches the metrics once, whether it is set before the call closes (read with the record) or
 * after (a call cancelled while its statement was admitted: handed over late).
 */
class RequestRecordTest {
  @Test
  void anAdmissionAfterTheCallClosedIsStillCountedOnce() {
    AdmissionRecorder recorder = new AdmissionRecorder();
    List<String> late = new ArrayList<>();
    RequestRecord before = new RequestRecord("m", 0, late::add);
    Context.current().withValue(RequestRecord.KEY, before)
        .run(() -> recorder.admitted(7, true));
    assertEquals("replayed", before.close());
    assertEquals(List.of(), late, "read with the record, not handed over again");

    RequestRecord after = new RequestRecord("m", 0, late::add);
    assertNull(after.close(), "closed (cancelled) while admitting");
    Context.current().withValue(RequestRecord.KEY, after)
        .run(() -> recorder.admitted(8, false));
    assertEquals(List.of("accepted"), late);
  }
}
