package io.transit.flight.server.config;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * One daemon per state directory: an OS file lock ({@code fcntl} through
 * {@link FileChannel#tryLock}) on {@code gateway.lock}, holding the holder's PID, kept until
 * {@link #close} (the daemon's close) or the process's end, whichever comes first — the OS drops
 * it when the process dies, even by SIGKILL, so a crash never leaves a stale lock. Two daemons on
 * one directory would each hand out sequences from the same journal.
 *
 * <p>Threads: acquired on the main thread, closed once by the daemon's close.
 */
public final class StateLock implements AutoCloseable {
  static final String FILE = "gateway.lock";

  private final FileChannel channel;
  private final FileLock lock;

  private StateLock(FileChannel channel, FileLock lock) {
    this.channel = channel;
    this.lock = lock;
  }

  /** Takes the lock of {@code stateDir}, or refuses naming the PID that holds it. */
  public static StateLock acquire(Path stateDir) throws ConfigException {
    Path file = stateDir.resolve(FILE);
    FileChannel channel = null;
    try {
      if (!Files.exists(file, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
        try {
          Files.createFile(file, PosixFilePermissions.asFileAttribute(
              PosixFilePermissions.fromString("rw-------")));
        } catch (java.nio.file.FileAlreadyExistsException raced) {
          // another daemon created it first; the lock below decides
        }
      }
      channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE,
          java.nio.file.LinkOption.NOFOLLOW_LINKS);
      FileLock lock;
      try {
        lock = channel.tryLock();
      } catch (OverlappingFileLockException sameProcess) {
        lock = null;
      }
      if (lock == null) {
        String holder = holder(channel);
        channel.close();
        throw new StateDirectoryBusyException("state_dir " + stateDir + " is in use by another "
            + "gateway (pid " + holder + "); one daemon per state directory");
      }
      byte[] pid = (ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.US_ASCII);
      channel.truncate(0);
      channel.write(ByteBuffer.wrap(pid), 0);
      channel.force(true);
      return new StateLock(channel, lock);
    } catch (IOException e) {
      if (channel != null) {
        try {
          channel.close();
        } catch (IOException ignored) {
          // the refusal below is what matters
        }
      }
      throw new ConfigException(file + ": cannot lock: " + e.getMessage(), e);
    }
  }

  /** The PID the holder wrote, or "unknown" while it has not written it yet. */
  private static String holder(FileChannel channel) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(32);
    channel.read(buf, 0);
    String text = new String(buf.array(), 0, buf.position(), StandardCharsets.US_ASCII).strip();
    return text.matches("[0-9]{1,19}") ? text : "unknown";
  }

  @Override
  public void close() throws IOException {
    try {
      lock.release();
    } finally {
      channel.close();
    }
  }

  /** A second daemon on a locked state directory; the CLI prints it as one line and exits 2. */
  public static final class StateDirectoryBusyException extends ConfigException {
    private static final long serialVersionUID = 1L;

    StateDirectoryBusyException(String message) {
      super(message);
    }
  }
}
