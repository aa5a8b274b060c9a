package io.transit.flight.server.config;

import io.transit.flight.crypto.Ed25519;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The daemon's private state directory: Ed25519 keys (ticket key, gateway inspection key, one key
 * per native principal), Bearer credentials, the journal and retained results.
 *
 * <p>Missing keys and credentials are generated on first run into files created 0600 inside
 * 0700 directories (a principal's key only while the journal's rights do not name the principal:
 * {@link #newKey}). An existing key or credential file that is group- or
 * other-accessible is refused: a secret that others could have read is not a secret any more, and
 * the operator must decide what to do (rotate, then fix the mode).
 *
 * <p>Everything else the daemon keeps here is private too: at start, {@link #tighten} restricts
 * the state, key, credential and engine directories to 0700 and every file under the engine
 * directory (journal, segments) to 0600, saying what it changed, or refuses naming the path.
 *
 * <p>Key file format: one line {@code ed25519-seed-v1 <base64 of the 32-byte seed>}. Credential
 * file format: one line holding the opaque token (printable ASCII, at least 32 characters).
 */
public final class StateDirectory {
  private static final String KEY_PREFIX = "ed25519-seed-v1 ";
  private static final Set<PosixFilePermission> OWNER_ONLY_FILE = PosixFilePermissions.fromString("rw-------");
  private static final Set<PosixFilePermission> OWNER_ONLY_DIR = PosixFilePermissions.fromString("rwx------");

  private final Path root;
  private final SecureRandom random;

  public StateDirectory(Path root, SecureRandom random) {
    this.root = root;
    this.random = random;
  }

  public Path root() {
    return root;
  }

  public Path ticketKeyFile() {
    return ticketKeyFile(root);
  }

  public Path inspectionKeyFile() {
    return inspectionKeyFile(root);
  }

  /** The ticket key's file in the state directory {@code root}. */
  public static Path ticketKeyFile(Path root) {
    return root.resolve("keys/ticket.key");
  }

  /** The inspection key's file in the state directory {@code root}. */
  public static Path inspectionKeyFile(Path root) {
    return root.resolve("keys/inspection.key");
  }

  public Path engineDir() {
    return root.resolve("engine");
  }

  /**
   * The JVM's temporary directory when the launcher set it ({@code java.io.tmpdir}, see {@code
   * cli.JvmOptions}): native libraries extracted at start, nothing kept across starts.
   */
  public static Path temporaryDir(Path root) {
    return root.resolve("tmp");
  }

  /**
   * Creates {@link #temporaryDir} (and a missing state directory above it) private to the
   * owner, tightening one that exists; the launcher calls it before the daemon's JVM starts.
   */
  public static Path createTemporaryDir(Path root) throws IOException {
    Path tmp = temporaryDir(root);
    createPrivateDirs(tmp);
    Files.setPosixFilePermissions(tmp, OWNER_ONLY_DIR);
    return tmp;
  }

  /**
   * Removes what earlier runs left in {@link #temporaryDir} (a daemon killed with -9 cannot
   * remove its extracted native libraries). Called only under the state lock, so no other
   * daemon of this directory is running; libraries this JVM extracted before the lock are loaded
   * (mapped) already, and removing a mapped file is harmless on POSIX.
   */
  public void emptyTemporary() {
    Path tmp = temporaryDir(root);
    if (!Files.isDirectory(tmp, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> all = Files.walk(tmp)) {
      all.sorted(Comparator.reverseOrder())
          .filter(p -> !p.equals(tmp))
          .forEach(p -> {
            try {
              Files.deleteIfExists(p);
            } catch (IOException e) {
              // Left for the next start; a leftover file costs disk, not correctness.
            }
          });
    } catch (IOException | UncheckedIOException e) {
      // As above.
    }
  }

  /** Creates the directory (0700) if absent. */
  public void prepare() throws ConfigException {
    try {
      createPrivateDirs(root);
      createPrivateDirs(temporaryDir(root));
      createPrivateDirs(root.resolve("keys"));
      createPrivateDirs(root.resolve("credentials"));
      createPrivateDirs(engineDir());
    } catch (IOException e) {
      throw new ConfigException("state_dir " + root + ": cannot create: " + e.getMessage(), e);
    }
  }

  /**
   * Restricts the state, {@code keys}, {@code credentials} and {@code engine} directories to
   * 0700 and everything under {@code engine} to 0700 (directories) or 0600 (files). One of those
   * four directories that is a symbolic link is judged by its target, which is what is kept
   * private; links under {@code engine} are left alone. Returns one line per path whose mode
   * changed. Keys and credentials are
   * not loosened or tightened here: a readable secret is refused where it is read.
   */
  public List<String> tighten() throws ConfigException {
    List<String> changed = new ArrayList<>();
    for (Path dir : List.of(root, root.resolve("keys"), root.resolve("credentials"))) {
      try {
        restrict(dir, OWNER_ONLY_DIR, changed);
      } catch (IOException e) {
        throw new ConfigException(e.getMessage(), e);
      }
    }
    // The second pass (after the engine opened) races the engine's own writes: a resumed query's
    // temporary segment renamed, a DuckDB spill file removed. A path gone meanwhile is skipped;
    // failing the start for it would exit 2, which the unit does not restart.
    try {
      Files.walkFileTree(engineDir(), new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs)
            throws IOException {
          restrict(dir, OWNER_ONLY_DIR, changed);
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
            throws IOException {
          if (attrs.isRegularFile()) { // symbolic links are left alone
            restrict(file, OWNER_ONLY_FILE, changed);
          }
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
          if (e instanceof NoSuchFileException) {
            return FileVisitResult.CONTINUE;
          }
          if (e instanceof java.nio.file.AccessDeniedException && Files.isDirectory(file)) {
            // The walk opens a directory before visiting it: one its owner cannot read is
            // restricted (so made readable) first, then walked, as check-config judges it.
            restrict(file, OWNER_ONLY_DIR, changed);
            if (!Files.isReadable(file) || !Files.isExecutable(file)) {
              throw e; // another's: the mode changed nothing for this user
            }
            Files.walkFileTree(file, this);
            return FileVisitResult.CONTINUE;
          }
          throw e;
        }
      });
    } catch (Refused e) {
      throw new ConfigException(e.getMessage(), e);
    } catch (IOException e) {
      throw new ConfigException("state_dir " + engineDir() + ": cannot list: " + e.getMessage(), e);
    }
    return changed;
  }

  /** A mode the daemon could not set on a path it keeps private. */
  private static final class Refused extends IOException {
    private static final long serialVersionUID = 1L;

    Refused(String message, IOException cause) {
      super(message, cause);
    }
  }

  /** Sets {@code p}'s mode to {@code wanted}; a path removed meanwhile is skipped. */
  private static void restrict(Path p, Set<PosixFilePermission> wanted, List<String> changed)
      throws Refused {
    try {
      // Followed, as the change below is: a link's own mode (always rwxrwxrwx) would be reported
      // as loosened at every start. Only real directories and files reach here from the walk.
      Set<PosixFilePermission> now = Files.getPosixFilePermissions(p);
      if (now.equals(wanted)) {
        return;
      }
      Files.setPosixFilePermissions(p, wanted);
      changed.add(p + ": mode " + PosixFilePermissions.toString(now) + " restricted to "
          + PosixFilePermissions.toString(wanted));
    } catch (NoSuchFileException e) {
      // Removed since it was listed (the engine's temporary files): nothing left to restrict.
    } catch (IOException e) {
      throw new Refused(p + ": cannot restrict to " + PosixFilePermissions.toString(wanted)
          + " (the daemon keeps its state private): " + e.getMessage(), e);
    }
  }

  /** Loads the key in {@code file}, generating it first when absent. */
  public Ed25519.KeyPair loadOrCreateKey(Path file) throws ConfigException {
    if (!Files.exists(file)) {
      keepKey(file, Ed25519.generate(random));
    }
    return readKey(file);
  }

  /**
   * A fresh key, not written: a principal's key is kept only once the journal's rights show the
   * principal unused ({@code auth.PrincipalKeys}), then written by {@link #keepKey}.
   */
  public Ed25519.KeyPair newKey() {
    return Ed25519.generate(random);
  }

  /**
   * Writes {@code key} to {@code file} when the file is missing; an existing file must hold the
   * same key (one written meanwhile by someone else is refused, not overwritten).
   */
  public void keepKey(Path file, Ed25519.KeyPair key) throws ConfigException {
    if (Files.exists(file)) {
      if (!readKey(file).publicKey().equals(key.publicKey())) {
        throw new ConfigException(file + ": written by someone else while the configuration"
            + " was loaded; load it again");
      }
      return;
    }
    writeSecret(file, KEY_PREFIX + Base64.getEncoder().encodeToString(key.seed()) + "\n");
  }

  /**
   * The key in {@code file} when it exists, refused as {@link #loadOrCreateKey} refuses it;
   * creates nothing ({@code check-config}, and the check of the principal keys against the
   * journal's rights).
   */
  public static Optional<Ed25519.KeyPair> existingKey(Path file) throws ConfigException {
    return Files.exists(file) ? Optional.of(readKey(file)) : Optional.empty();
  }

  private static Ed25519.KeyPair readKey(Path file) throws ConfigException {
    String text = readSecret(file).strip();
    if (!text.startsWith(KEY_PREFIX)) {
      throw new ConfigException(file + ": not an ed25519-seed-v1 key file");
    }
    byte[] seed;
    try {
      seed = Base64.getDecoder().decode(text.substring(KEY_PREFIX.length()));
    } catch (IllegalArgumentException e) {
      throw new ConfigException(file + ": key is not valid base64");
    }
    if (seed.length != Ed25519.SEED_BYTES) {
      throw new ConfigException(file + ": key seed has " + seed.length + " bytes (expected: 32)");
    }
    return Ed25519.fromSeed(seed);
  }

  /** Loads the credential in {@code file}, generating a fresh random one first when absent. */
  public String loadOrCreateCredential(Path file) throws ConfigException {
    if (!Files.exists(file)) {
      byte[] token = new byte[32];
      random.nextBytes(token);
      writeSecret(file, "tfg_" + Base64.getUrlEncoder().withoutPadding().encodeToString(token) + "\n");
    }
    return readCredential(file);
  }

  /**
   * The credential in {@code file} when it exists, refused as {@link #loadOrCreateCredential}
   * refuses it; creates nothing.
   */
  public static Optional<String> existingCredential(Path file) throws ConfigException {
    return Files.exists(file) ? Optional.of(readCredential(file)) : Optional.empty();
  }

  private static String readCredential(Path file) throws ConfigException {
    String token = readSecret(file).strip();
    if (token.length() < 32 || token.length() > 512) {
      throw new ConfigException(file + ": credential has " + token.length()
          + " characters (expected: 32..512)");
    }
    for (int i = 0; i < token.length(); i++) {
      char ch = token.charAt(i);
      if (ch <= 0x20 || ch >= 0x7f) {
        throw new ConfigException(file + ": credential must be printable ASCII without spaces");
      }
    }
    return token;
  }

  /**
   * Refuses two callers with equal credentials: the mapping from a Bearer token to a principal
   * must be a function. Comparison is over SHA-256 digests so the check never logs a token.
   */
  public static void checkDistinct(Map<String, String> credentialsByCaller) throws ConfigException {
    Map<String, String> seen = new HashMap<>();
    for (Map.Entry<String, String> e : credentialsByCaller.entrySet()) {
      String digest = Base64.getEncoder().encodeToString(sha256(e.getValue()));
      String other = seen.putIfAbsent(digest, e.getKey());
      if (other != null) {
        throw new ConfigException("callers " + other + " and " + e.getKey()
            + " have equal credentials (each caller needs its own)");
      }
    }
  }

  private static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String readSecret(Path file) throws ConfigException {
    try {
      Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
      for (PosixFilePermission p : perms) {
        if (p.name().startsWith("GROUP") || p.name().startsWith("OTHERS")) {
          throw new ConfigException(file + ": mode " + PosixFilePermissions.toString(perms)
              + " lets group or others access a secret (expected: rw------- / 0600)");
        }
      }
    } catch (IOException e) {
      throw new ConfigException(file + ": cannot read: " + e.getMessage(), e);
    }
    // A key or credential file is one line: 64 KiB is far beyond any.
    return new String(readBounded(file, 64 << 10, "secret file"), StandardCharsets.US_ASCII);
  }

  /**
   * The bytes of a secret or key file, refused beyond {@code maxBytes} or when it is not a regular
   * file (a link to one is followed): a file named by mistake — the journal's database, a device,
   * a FIFO — is neither read whole into the heap nor waited on (opening a FIFO blocks the load,
   * and a reload holding the reload lock, until something writes to it). {@code field} names it
   * in refusals.
   */
  public static byte[] readBounded(Path file, int maxBytes, String field) throws ConfigException {
    if (!Files.isRegularFile(file)) {
      throw new ConfigException(field + ": " + file + " (expected: a regular file)");
    }
    try (java.io.InputStream in = Files.newInputStream(file)) {
      byte[] bytes = in.readNBytes(maxBytes + 1);
      if (bytes.length > maxBytes) {
        throw new ConfigException(
            field + ": " + file + " (expected: at most " + maxBytes + " bytes)");
      }
      return bytes;
    } catch (IOException e) {
      throw new ConfigException(field + ": " + file + ": cannot read: " + e.getMessage(), e);
    }
  }

  private void writeSecret(Path file, String content) throws ConfigException {
    try {
      createPrivateDirs(file.getParent());
      replaceDurably(file, content.getBytes(StandardCharsets.US_ASCII), OWNER_ONLY_FILE);
    } catch (IOException e) {
      throw new ConfigException(file + ": cannot write: " + e.getMessage(), e);
    }
  }

  /**
   * Puts {@code content} at {@code file} whole or not at all, and durably: a power cut after
   * this returns finds the new file (a regenerated ticket key would refuse every ticket already
   * handed out; a configuration written by {@code init} would be empty). Written to a sibling
   * temporary file created with {@code mode} (the umask still applies) and synced, renamed over
   * {@code file}, then the directory synced so that the rename itself survives.
   */
  public static void replaceDurably(Path file, byte[] content, Set<PosixFilePermission> mode)
      throws IOException {
    // Created with its mode from the start (a secret is never briefly world-readable), and
    // written through the one open that created it: a name reopened after its creation could
    // by then be a link another user of the directory put there.
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    Files.deleteIfExists(tmp);
    try (SeekableByteChannel ch = Files.newByteChannel(tmp,
        Set.<OpenOption>of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
            StandardOpenOption.SYNC, LinkOption.NOFOLLOW_LINKS),
        PosixFilePermissions.asFileAttribute(mode))) {
      ByteBuffer bytes = ByteBuffer.wrap(content);
      while (bytes.hasRemaining()) {
        ch.write(bytes);
      }
    }
    Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    Path dir = file.toAbsolutePath().getParent();
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    }
  }

  private static void createPrivateDirs(Path dir) throws IOException {
    if (Files.isDirectory(dir)) {
      return;
    }
    Path parent = dir.getParent();
    if (parent != null && !Files.isDirectory(parent)) {
      createPrivateDirs(parent);
    }
    try {
      Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(OWNER_ONLY_DIR));
    } catch (FileAlreadyExistsException e) {
      // raced with another creator; fine
    }
  }
}
