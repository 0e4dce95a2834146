#!/usr/bin/env python3
"""`gpuscope top` in a real terminal of 80x24 (tmux), against the fake NVML.

The pane is captured (tmux capture-pane -p) and checked: no line over 80 columns, at most 24
lines, no field cut (every word in the GPU and process tables is a whole word of the same
frame drawn without a width limit, except a name shortened with "…", which must be a prefix of
its whole name), the sparklines of the history present, and on GPUs without GPM the plain
statement that SM and tensor activity are not available there and why. Then --sort orders the
rows. Exit 77 (skipped) only when tmux is not installed.

usage: top_tmux_test.py GPUSCOPE FAKE_NVML_LIBRARY TESTDATA_NVML_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

SPARKS = set("▁▂▃▄▅▆▇█")


def env_for(lib, fixture, proc):
    env = dict(os.environ)
    env.update({"GPUSCOPE_NVML_LIBRARY": lib, "GPUSCOPE_FAKE_NVML_FIXTURE": fixture, "GPUSCOPE_PROC_ROOT": proc})
    env.pop("NO_COLOR", None)
    return env


def plain(gpuscope, env, *args):
    """One frame without a terminal: every line at full width."""
    r = subprocess.run([gpuscope, "top", "--interval", "100ms", "--count", "1", "--idle-after", "0s", *args],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
    return r.returncode, r.stdout, r.stderr


def pane(gpuscope, env, cols, rows, socket_dir, frames_ready):
    """The pane of `top` running in tmux at cols x rows, once `frames_ready(text)` holds."""
    sock = os.path.join(socket_dir, "tmux.sock")
    cmd = " ".join("%s='%s'" % (k, env[k]) for k in ("GPUSCOPE_NVML_LIBRARY", "GPUSCOPE_FAKE_NVML_FIXTURE",
                                                     "GPUSCOPE_PROC_ROOT"))
    cmd = "env -u NO_COLOR %s '%s' top --interval 100ms --idle-after 0s" % (cmd, gpuscope)
    subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", str(cols), "-y", str(rows), cmd],
                   check=True, timeout=20)
    try:
        text = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            time.sleep(0.2)
            r = subprocess.run(["tmux", "-S", sock, "capture-pane", "-p"], stdout=subprocess.PIPE, timeout=10)
            text = r.stdout.decode("utf-8")
            if frames_ready(text):
                break
        return text
    finally:
        subprocess.run(["tmux", "-S", sock, "send-keys", "q"], timeout=10)
        time.sleep(0.3)
        subprocess.run(["tmux", "-S", sock, "kill-server"], stderr=subprocess.DEVNULL, timeout=10)


def table_rows(text):
    """The lines of the GPU and process tables: from a header starting "GPU " to a blank line."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith("GPU "):
            inside = "UTIL" in line or "PID" in line  # A header, or the no-GPM statement.
        elif not line.strip():
            inside = False
        if inside and not (" util " in line and "SM act" in line):  # History lines: sparklines.
            rows.append(line)
    return rows


def check_pane(name, text, wide, cols, rows, failures):
    lines = text.rstrip("\n").split("\n")
    for i, line in enumerate(lines):
        if len(line) > cols:
            failures.append("%s: line %d has %d columns: %r" % (name, i + 1, len(line), line))
    if len(lines) > rows:
        failures.append("%s: %d lines on a %d-row screen" % (name, len(lines), rows))
    whole = set(wide.split())
    for line in table_rows(text):
        for word in line.split():
            if word in whole:
                continue
            if word.endswith("…") and any(w.startswith(word[:-1]) for w in whole):
                continue
            failures.append("%s: %r is not a whole field of the frame: %r" % (name, word, line))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    gpuscope, lib, nvml_dir = sys.argv[1:]
    if not shutil.which("tmux"):
        print("SKIPPED: no tmux on PATH (Debian package `tmux`, in scripts/debian-packages)")
        sys.exit(77)
    proc = os.path.join(nvml_dir, "proc")
    failures = []
    with tempfile.TemporaryDirectory(prefix="gpuscope-top-test-") as tmp:
        # Two H200s with GPM: the history shows utilization beside SM active.
        env = env_for(lib, os.path.join(nvml_dir, "synthetic_2gpu.txt"), proc)
        rc, wide, err = plain(gpuscope, env)
        assert rc == 0, err
        text = pane(gpuscope, env, 80, 24, tmp,
                    lambda t: "waste" in t.lower() and sum(c in SPARKS for c in t) >= 12)
        print(text)
        check_pane("h200", text, wide, 80, 24, failures)
        history = [l for l in text.splitlines() if " util " in l and "SM act" in l]
        if len(history) != 2 or not all(any(c in SPARKS for c in l.split("SM act")[1]) for l in history):
            failures.append("h200: no utilization / SM active sparkline per GPU: %r" % history)
        for field in ("100.0%", "96.5%", "93.8%", "16.0/140.4"):
            if field not in text:
                failures.append("h200: %s missing" % field)

        # Five A100s without GPM: the plain statement, and every row still fits.
        env = env_for(lib, os.path.join(nvml_dir, "synthetic_a100_nogpm.txt"), proc)
        rc, wide, err = plain(gpuscope, env)
        assert rc == 0, err
        text = pane(gpuscope, env, 80, 24, tmp, lambda t: "waste" in t.lower() and "GPM" in t)
        print(text)
        check_pane("a100", text, wide, 80, 24, failures)
        flat = " ".join(text.split())
        if "SM active, tensor, occupancy and DRAM activity are not available" not in flat or "GPM" not in flat:
            failures.append("a100: no statement that SM/tensor activity is unavailable without GPM")
        if "n/a (no GPM)" not in text:
            failures.append("a100: the history does not say SM active is not measured")

        # --sort mem: GPUs by memory used, largest first (16.0, 4.0, 1.6, 1.6, 0.5 GiB).
        rc, out, err = plain(gpuscope, env, "--sort", "mem")
        order = [l.lstrip("! ").split()[0] for l in out.splitlines() if "A100-SXM4" in l]
        if rc != 0 or order != ["0", "1", "3", "4", "2"]:
            failures.append("--sort mem: GPU order %s (rc %d %s)" % (order, rc, err))
        rc, out, err = plain(gpuscope, env, "--sort", "colour")
        if rc != 2 or "--sort colour" not in err or err.count("\n") != 1:
            failures.append("--sort colour: rc %d, stderr %r (want exit 2 and one line)" % (rc, err))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("top fits 80x24: no line over 80 columns, no field cut, sparklines present")


if __name__ == "__main__":
    main()
