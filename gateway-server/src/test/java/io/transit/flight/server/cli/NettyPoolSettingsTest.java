package io.transit.flight.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class NettyPoolSettingsTest {
  private static final String[] KEYS = {
    "io.netty.allocator.maxOrder", "io.grpc.netty.shaded.io.netty.allocator.maxOrder"
  };
  private final String[] saved = new String[KEYS.length];

  @BeforeEach
  void save() {
    for (int i = 0; i < KEYS.length; i++) {
      saved[i] = System.getProperty(KEYS[i]);
    }
  }

  @AfterEach
  void restore() {
    for (int i = 0; i < KEYS.length; i++) {
      if (saved[i] == null) {
        System.clearProperty(KEYS[i]);
      } else {
        System.setProperty(KEYS[i], saved[i]);
      }
    }
  }

  @Test
  void bothPoolsGetSixteenMebibyteChunksUnlessTheOperatorChose() {
    System.clearProperty(KEYS[0]);
    System.setProperty(KEYS[1], "9");
    Main.poolWholeBatches();
    assertEquals("11", System.getProperty(KEYS[0]), "8 KiB pages << 11 = 16 MiB chunks");
    assertEquals("9", System.getProperty(KEYS[1]), "an operator's -D setting is kept");
  }
}
