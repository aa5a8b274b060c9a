"""Starts the real gateway daemon (scripts/gateway) on loopback for end-to-end tests."""

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVING = re.compile(r"is serving grpc://([0-9.]+):(\d+)")


class Daemon:
    """One gateway process over a state directory; restartable on the same directory."""

    def __init__(self, state_dir: Path, port: int = 0):
        self.state_dir = Path(state_dir)
        self.port = port
        self.proc = None
        self.output = []

    def start(self, timeout: float = 90.0, ignore_hangup: bool = False):
        """Starts the daemon with SIGHUP at its default, whatever this runner inherited (so the
        reload tests also pass under nohup); ``ignore_hangup`` starts it ignored, as nohup does."""
        args = [str(ROOT / "scripts" / "gateway"), "demo", "--state-dir", str(self.state_dir),
                "--port", str(self.port)]
        env = dict(os.environ, TRANSIT_NO_BUILD="1")
        hangup = signal.SIG_IGN if ignore_hangup else signal.SIG_DFL

        def preexec():
            signal.signal(signal.SIGHUP, hangup)

        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env, preexec_fn=preexec)
        found = threading.Event()

        def pump():
            for line in self.proc.stdout:
                self.output.append(line)
                m = SERVING.search(line)
                if m and not found.is_set():
                    self.port = int(m.group(2))
                    found.set()
            found.set()

        threading.Thread(target=pump, daemon=True).start()
        if not found.wait(timeout) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError("gateway did not start:\n" + "".join(self.output[-40:]))
        return self

    @property
    def uri(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def token(self, caller: str) -> str:
        return (self.state_dir / "credentials" / f"{caller}.token").read_text().strip()

    def stop(self, sig=signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait(10)
            raise AssertionError("gateway did not stop within %.0fs" % timeout)
        finally:
            self.proc = None
        return rc

    def kill9(self) -> None:
        self.stop(signal.SIGKILL)

    def hangup(self) -> None:
        self.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
