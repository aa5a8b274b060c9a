package io.transit.flight.server.config;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * {@code check-config}'s look at the state directory as the user running it: refuses what a
 * start by that user would refuse there, creating nothing. A start ({@code GatewayServer.start})
 * creates the state, {@code tmp}, {@code keys}, {@code credentials} and {@code engine} directories
 * that are missing ({@link StateDirectory#prepare}), takes the lock ({@link StateLock}: creates
 * or opens {@code gateway.lock} for writing), restricts those directories and everything under
 * {@code engine} to the owner ({@link StateDirectory#tighten}: a mode can only be changed by its
 * owner, or root), lists {@code engine} and its subdirectories, and reads the keys and credentials
 * that exist and writes those that do not. The engine's spill directory
 * ({@code engine.temp_dir}) is created when missing.
 *
 * <p>Judged with {@code access(2)} ({@link Files#isReadable} and the others) for the running
 * process, so root, ACLs and read-only mounts count as they do for the daemon; a path owned by
 * the user counts as usable once its mode is restricted, as the start restricts it.
 *
 * <p>Threads: stateless; any thread.
 */
public final class StateAccess {
  private static final Set<PosixFilePermission> OWNER_ONLY_FILE =
      PosixFilePermissions.fromString("rw-------");
  private static final Set<PosixFilePermission> OWNER_ONLY_DIR =
      PosixFilePermissions.fromString("rwx------");

  /** Who runs the check: {@code uid} -1 when unknown (ownership is then not judged). */
  public record User(int uid, String name) {
    /** The running process's user: the file-system uid of {@code /proc/self/status}. */
    public static User current() {
      int uid = -1;
      try {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
          if (line.startsWith("Uid:")) {
            String[] ids = line.substring(4).strip().split("\\s+");
            uid = Integer.parseInt(ids[ids.length - 1]); // real, effective, saved, file system
          }
        }
      } catch (IOException | RuntimeException e) {
        // Not Linux: only what access(2) says is judged.
      }
      return new User(uid, System.getProperty("user.name", "?"));
    }

    boolean root() {
      return uid == 0;
    }
  }

  private final User user;
  /** Directories this user owns or will create: usable whatever their mode now. */
  private final Set<Path> own = new HashSet<>();

  private StateAccess(User user) {
    this.user = user;
  }

  /** Refuses, naming the path and what the running user lacks, what a start would refuse. */
  public static void check(ResolvedConfig cfg) throws ConfigException {
    check(cfg, User.current());
  }

  /** As {@link #check(ResolvedConfig)}, judging ownership for {@code user}. */
  public static void check(ResolvedConfig cfg, User user) throws ConfigException {
    StateAccess a = new StateAccess(user);
    Path root = cfg.stateDir().toAbsolutePath().normalize();
    a.stateDirectory(root);
    List<Path> secrets = new ArrayList<>(List.of(
        StateDirectory.ticketKeyFile(root), StateDirectory.inspectionKeyFile(root)));
    for (ResolvedConfig.Caller c : cfg.callers()) {
      secrets.add(c.credentialFile());
      secrets.add(c.principalKeyFile());
    }
    for (Path s : new LinkedHashSet<>(secrets)) {
      a.secret(s.toAbsolutePath().normalize());
    }
    a.createdOrUsable(cfg.engine().tempDir().toAbsolutePath().normalize(), "engine.temp_dir");
  }

  private void stateDirectory(Path root) throws ConfigException {
    Found found = attributes(root, "state_dir " + root);
    if (found.attrs() == null) {
      creatable(root, "state_dir " + root); // the start creates it all, as this user
      own.add(root);
      return;
    }
    if (!found.attrs().isDirectory()) {
      throw new ConfigException("state_dir " + root + ": not a directory");
    }
    // Before the start restricts anything, the missing directories and the lock file are made
    // in the state directory as its mode is now.
    require(root, "state_dir " + root, "reach", false, false, true);
    Path missing = null;
    for (String part : List.of("tmp", "keys", "credentials", "engine", StateLock.FILE)) {
      Path p = root.resolve(part);
      BasicFileAttributes a = attributes(p, "state_dir " + p).attrs();
      if (a == null) {
        missing = missing == null ? p : missing;
        own.add(p); // created by this user
      } else if (!part.equals(StateLock.FILE) && !a.isDirectory()) {
        throw new ConfigException("state_dir " + p + ": not a directory");
      }
    }
    if (missing != null) {
      require(root, "state_dir " + missing, "create", false, true, true);
    }
    Path lock = root.resolve(StateLock.FILE);
    if (!own.contains(lock)) {
      require(lock, lock.toString(), "lock", true, true, false);
    }
    for (String dir : List.of("", "keys", "credentials")) {
      Path p = root.resolve(dir);
      if (!own.contains(p)) {
        restrictable(p, OWNER_ONLY_DIR);
        require(p, "state_dir " + p, "list", true, true, true);
      }
    }
    Path engine = root.resolve("engine");
    if (!own.contains(engine)) {
      engine(engine);
    }
  }

  /** The walk {@link StateDirectory#tighten} makes: every directory and file under engine. */
  private void engine(Path engine) throws ConfigException {
    try {
      Files.walkFileTree(engine, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs)
            throws IOException {
          unchecked(() -> {
            restrictable(dir, OWNER_ONLY_DIR);
            require(dir, "state_dir " + dir, "list", true, true, true);
          });
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
            throws IOException {
          if (attrs.isRegularFile()) { // links are left alone, as the start leaves them
            unchecked(() -> {
              restrictable(file, OWNER_ONLY_FILE);
              require(file, "state_dir " + file, "write", true, true, false);
            });
          }
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
          if (e instanceof NoSuchFileException) {
            return FileVisitResult.CONTINUE;
          }
          if (e instanceof AccessDeniedException && !Files.isDirectory(file)
              && own.contains(file.getParent())) {
            // Unseen through a directory of this user's that the start restricts (so opens up)
            // before it lists it: what is in it cannot be judged here.
            return FileVisitResult.CONTINUE;
          }
          if (e instanceof AccessDeniedException && Files.isDirectory(file)) {
            // Refused unless it is this user's: the start restricts it to 0700 before it lists
            // it, so only what is in it stays unseen here.
            unchecked(() -> {
              restrictable(file, OWNER_ONLY_DIR);
              require(file, "state_dir " + file, "list", true, true, true);
            });
            return FileVisitResult.CONTINUE;
          }
          throw e;
        }
      });
    } catch (Refusal r) {
      throw r.refusal;
    } catch (IOException e) {
      throw new ConfigException("state_dir " + engine + ": cannot list as " + user.name() + ": "
          + e.getMessage(), e);
    }
  }

  /**
   * A key or credential file: one that exists must be readable (until 2026-12-07 an unreadable
   * one counted as not there yet); a missing one is written in its directory.
   */
  private void secret(Path file) throws ConfigException {
    Found found = attributes(file, file.toString());
    if (found.hidden()) {
      return;
    }
    if (found.attrs() != null) {
      require(file, file.toString(), "read", true, false, false);
      return;
    }
    Path dir = file.getParent();
    Found d = attributes(dir, file.toString());
    if (d.hidden() || own.contains(dir)) {
      return;
    }
    if (d.attrs() == null) {
      creatable(dir, file.toString());
      return;
    }
    if (!d.attrs().isDirectory()) {
      throw new ConfigException(file + ": " + dir + " is not a directory");
    }
    // Written beside it and renamed, then the directory opened to sync the rename.
    require(dir, file.toString(), "create", true, true, true);
  }

  /** A directory the start creates when missing, or uses as it is. */
  private void createdOrUsable(Path dir, String field) throws ConfigException {
    Found f = attributes(dir, field + " " + dir);
    if (f.hidden()) {
      return;
    }
    if (f.attrs() == null) {
      creatable(dir, field + " " + dir);
    } else if (!f.attrs().isDirectory()) {
      throw new ConfigException(field + " " + dir + ": not a directory");
    } else {
      require(dir, field + " " + dir, "write", true, true, true);
    }
  }

  /** The missing {@code path} can be made: its nearest existing ancestor is writable. */
  private void creatable(Path path, String what) throws ConfigException {
    for (Path a = path.getParent(); a != null; a = a.getParent()) {
      Found f = attributes(a, what);
      if (f.hidden()) {
        return;
      }
      if (f.attrs() != null) {
        if (!f.attrs().isDirectory()) {
          throw new ConfigException(what + ": " + a + " is not a directory");
        }
        require(a, what, "create", false, true, true);
        return;
      }
    }
  }

  /**
   * The start changes {@code p}'s mode to {@code wanted} unless it is already that: only the
   * owner (or root) may. A path this user owns is then usable whatever its mode now.
   */
  private void restrictable(Path p, Set<PosixFilePermission> wanted) throws ConfigException {
    if (user.uid() < 0) {
      return;
    }
    int owner;
    Set<PosixFilePermission> mode;
    try {
      owner = (Integer) Files.getAttribute(p, "unix:uid");
      mode = Files.getPosixFilePermissions(p);
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      return; // judged by access(2) below
    }
    if (owner == user.uid()) {
      own.add(p);
      return;
    }
    if (!mode.equals(wanted) && !user.root()) {
      throw new ConfigException("state_dir " + p + ": cannot restrict to "
          + PosixFilePermissions.toString(wanted) + " as " + user.name() + describe(p)
          + ": the daemon keeps its state private, so it must own it (or run as root)");
    }
  }

  /**
   * Refuses {@code p} unless the running user may read, write and search it as asked;
   * {@code verb} ({@code list}, {@code write}, {@code read}, {@code lock}) says what fails, and
   * null says {@code what} does.
   */
  private void require(Path p, String what, String verb, boolean read, boolean write,
      boolean search) throws ConfigException {
    if (own.contains(p)) {
      return;
    }
    List<String> missing = new ArrayList<>();
    if (read && !Files.isReadable(p)) {
      missing.add("read");
    }
    if (write && !Files.isWritable(p)) {
      missing.add("write");
    }
    if (search && !Files.isExecutable(p)) {
      missing.add("search (x)");
    }
    if (missing.isEmpty()) {
      return;
    }
    throw new ConfigException(what + (verb == null ? "" : ": cannot " + verb) + " as "
        + user.name() + ", lacking " + String.join(" and ", missing) + " permission on " + p
        + describe(p));
  }

  /**
   * What is at {@code p} (followed): its attributes, null when nothing is there, or hidden when
   * a directory of this user's on the way has a mode that lets nothing through now (the start
   * restricts it to 0700 first). Refuses a path another user's directory keeps out of reach.
   */
  private Found attributes(Path p, String what) throws ConfigException {
    try {
      return new Found(Files.readAttributes(p, BasicFileAttributes.class), false);
    } catch (NoSuchFileException e) {
      return new Found(null, false);
    } catch (IOException e) {
      // Not a directory or not searchable on the way: name the one that stops it.
      for (int i = 1; i < p.getNameCount(); i++) {
        Path a = p.getRoot() == null ? p.subpath(0, i) : p.getRoot().resolve(p.subpath(0, i));
        try {
          if (!Files.readAttributes(a, BasicFileAttributes.class).isDirectory()) {
            throw new ConfigException(what + ": " + a + " is not a directory");
          }
        } catch (NoSuchFileException gone) {
          return new Found(null, false);
        } catch (IOException other) {
          break;
        }
        if (!Files.isExecutable(a)) {
          if (own.contains(a)) {
            return new Found(null, true);
          }
          throw new ConfigException(what + ": cannot reach as " + user.name()
              + ", lacking search (x) permission on " + a + describe(a));
        }
      }
      throw new ConfigException(what + ": cannot read as " + user.name() + ": " + e, e);
    }
  }

  private record Found(BasicFileAttributes attrs, boolean hidden) {}

  /** " (owner NAME, mode rwx------)", or nothing when that cannot be read either. */
  private static String describe(Path p) {
    try {
      return " (owner " + Files.getOwner(p).getName() + ", mode "
          + PosixFilePermissions.toString(Files.getPosixFilePermissions(p)) + ")";
    } catch (IOException | UnsupportedOperationException e) {
      return "";
    }
  }

  private interface Check {
    void run() throws ConfigException;
  }

  /** A refusal carried through the file walk. */
  private static final class Refusal extends IOException {
    private static final long serialVersionUID = 1L;
    final transient ConfigException refusal;

    Refusal(ConfigException refusal) {
      super(refusal.getMessage(), refusal);
      this.refusal = refusal;
    }
  }

  private static void unchecked(Check c) throws Refusal {
    try {
      c.run();
    } catch (ConfigException e) {
      throw new Refusal(e);
    }
  }

}
