"""Summarises a JFR recording: where the gateway's time went (CPU samples and waits).

Uses the JDK's ``jfr print --json``; reports, per sample share, the hottest methods (self time:
the top frame), the heaviest frames anywhere on the stack (inclusive) the busiest threads, and
how long serving-path threads were parked (flow control, queues).
"""

import collections
import json
import re
import subprocess

THREAD_NUMBER = re.compile(r"[-#]?\d+$")


def summarise(recording, top: int = 15) -> dict:
    raw = subprocess.run(["jfr", "print", "--json", "--stack-depth", "64",
                          "--events", "jdk.ExecutionSample,jdk.NativeMethodSample",
                          str(recording)],
                         check=True, capture_output=True, text=True).stdout
    events = json.loads(raw)["recording"]["events"]
    self_time, inclusive, threads = (collections.Counter() for _ in range(3))
    native = collections.Counter()
    cpu = [e for e in events if e["type"] == "jdk.ExecutionSample"]
    for e in events:
        if e["type"] == "jdk.NativeMethodSample":
            # Threads in native code; only the serving path's (file reads), not idle epoll waits.
            names = [_frame(f) for f in (e["values"].get("stackTrace") or {}).get("frames") or []]
            if any(n.startswith("io.transit.") for n in names):
                native[names[0]] += 1
    for e in cpu:
        values = e["values"]
        frames = (values.get("stackTrace") or {}).get("frames") or []
        names = [_frame(f) for f in frames]
        if names:
            self_time[names[0]] += 1
        for n in set(names):
            inclusive[n] += 1
        thread = (values.get("sampledThread") or {}).get("javaName") or "?"
        # Pool threads differ only by a trailing number: group them.
        threads[THREAD_NUMBER.sub("", thread)] += 1
    total = len(cpu) or 1

    def share(counter):
        return [(name, n, 100.0 * n / total) for name, n in counter.most_common(top)]

    return {"samples": len(cpu), "native": native.most_common(top), "self": share(self_time),
            "inclusive": share(_interesting(inclusive)), "threads": share(threads),
            "waits": waits(recording)}


def _frame(f) -> str:
    # JFR names types in internal form (java/lang/Thread).
    return f"{f['method']['type']['name'].replace('/', '.')}.{f['method']['name']}"


def waits(recording, top: int = 10) -> list:
    """Time threads spent parked or waiting, by the first gateway frame on the stack (ms)."""
    raw = subprocess.run(["jfr", "print", "--json", "--stack-depth", "64", "--events",
                          "jdk.ThreadPark,jdk.JavaMonitorWait,jdk.JavaMonitorEnter",
                          str(recording)], check=True, capture_output=True, text=True).stdout
    totals = collections.Counter()
    for e in json.loads(raw)["recording"]["events"]:
        values = e["values"]
        frames = [_frame(f) for f in (values.get("stackTrace") or {}).get("frames") or []]
        where = next((n for n in frames if n.startswith("io.transit.")), None)
        if where is None:
            continue  # idle pool threads and JDK housekeeping, not the serving path
        totals[f"{e['type'].split('.')[-1]} in {where}"] += _millis(values.get("duration"))
    return totals.most_common(top)


def _millis(duration) -> float:
    """JFR's JSON durations look like "PT0.012345S"."""
    if not isinstance(duration, str) or not duration.startswith("PT"):
        return 0.0
    text, total = duration[2:], 0.0
    for unit, scale in (("H", 3.6e6), ("M", 6e4), ("S", 1e3)):
        if unit in text:
            value, text = text.split(unit, 1)
            total += float(value) * scale
    return total


def _interesting(counter):
    """Inclusive counts without the frames every gRPC/thread stack has."""
    boring = ("java.lang.Thread.run", "java.util.concurrent.ThreadPoolExecutor",
              "io.grpc.netty.shaded.io.netty.util.concurrent.SingleThreadEventExecutor",
              "io.grpc.netty.shaded.io.netty.util.internal.ThreadExecutorMap",
              "io.grpc.netty.shaded.io.netty.util.concurrent.FastThreadLocalRunnable",
              "io.grpc.internal.SerializingExecutor.run", "io.grpc.internal.ContextRunnable.run")
    return collections.Counter({k: v for k, v in counter.items() if not k.startswith(boring)})


def markdown(summary: dict) -> str:
    lines = [f"JFR execution samples: {summary['samples']}", "",
             "JFR cannot walk a thread's stack while it runs a JIT intrinsic stub, so time in the"
             " SHA-256 intrinsic (the segment digest) is mostly missing from these shares; the"
             " JMH `SegmentReadBenchmark.digest` figure measures it directly.", ""]
    for title, key in (("Self (top frame)", "self"), ("Inclusive (anywhere on the stack)",
                                                      "inclusive"), ("Threads", "threads")):
        lines += [f"**{title}**", "", "| share | samples | frame |", "|---:|---:|---|"]
        lines += [f"| {pct:.1f}% | {n} | `{name}` |" for name, n, pct in summary[key]]
        lines.append("")
    if summary.get("native"):
        lines += ["**Serving-path threads in native code (samples)**", "",
                  "| samples | frame |", "|---:|---|"]
        lines += [f"| {n} | `{name}` |" for name, n in summary["native"]]
        lines.append("")
    if summary.get("waits"):
        lines += ["**Waiting (parked / monitor), by first gateway frame**", "",
                  "| ms | where |", "|---:|---|"]
        lines += [f"| {ms:.0f} | `{where}` |" for where, ms in summary["waits"]]
        lines.append("")
    return "\n".join(lines)
