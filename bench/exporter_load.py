#!/usr/bin/env python3
"""Load and abuse benchmark of `gpuscope serve` (numbers for docs/validation.md).

usage: exporter_load.py GPUSCOPE_BIN FAKE_NVML_SO TESTDATA_NVML_DIR

Against the fake NVML (synthetic_2gpu.txt), on loopback:
  1. 1,000 concurrent scrapes (1,000 client threads released together, one connection each),
     three rounds: p50 / p99 / max latency, failures.
  2. The same with 16 slowloris connections open (each sends a header line every 2 s and never
     ends its request), plus 200 sequential scrapes meanwhile.
  3. RSS of the exporter before, during (peak, sampled every 10 ms) and after a 200 MB POST to
     a 404 path, then four at once; and after a request with 10,000 headers.
The client is Python: latencies include its own scheduling (1,000 threads under the GIL).
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def scrape(port, timeout=10.0):
    """One GET /metrics on a fresh connection; returns (seconds, ok)."""
    t0 = time.perf_counter()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        return time.perf_counter() - t0, data.startswith(b"HTTP/1.1 200")
    except OSError:
        return time.perf_counter() - t0, False


def burst(port, n=1000):
    barrier = threading.Barrier(n)
    results = [None] * n

    def one(i):
        barrier.wait()
        results[i] = scrape(port)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lat = sorted(r[0] * 1000 for r in results)
    fails = sum(1 for r in results if not r[1])
    return lat, fails


def pct(lat, p):
    return lat[min(len(lat) - 1, int(len(lat) * p / 100))]


def report(name, lat, fails):
    print(f"{name}: n={len(lat)} p50={pct(lat, 50):.1f} ms p99={pct(lat, 99):.1f} ms "
          f"max={lat[-1]:.1f} ms failures={fails}", flush=True)


class Slowloris:
    def __init__(self, port, n=16, every_s=2.0):
        self.socks = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            self.socks.append(s)
        self.started = time.monotonic()
        self.stop = threading.Event()
        self.cut = 0
        self.thread = threading.Thread(target=self.run, args=(every_s,))
        self.thread.start()

    def run(self, every_s):
        i = 0
        while not self.stop.wait(every_s):
            i += 1
            for s in list(self.socks):
                try:
                    s.sendall(f"X-Slow-{i}: a\r\n".encode())
                except OSError:
                    self.cut += 1
                    self.socks.remove(s)

    def close(self):
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def post(port, size, peak, pid):
    """POSTs `size` bytes to /nope; returns (status line, bytes the server took)."""
    sent = 0
    status = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n\r\n".encode())
        chunk = b"a" * (1 << 20)
        try:
            while sent < size:
                sent += s.send(chunk[: min(len(chunk), size - sent)])
                peak[0] = max(peak[0], rss_kib(pid))
        except OSError:
            pass
        try:
            status = s.recv(200).split(b"\r\n")[0]
        except OSError:
            pass
    return status, sent


def serve_setup(argv, usage):
    """From GPUSCOPE_BIN FAKE_NVML_SO TESTDATA_NVML_DIR: (binary, a free port, the environment of
    a `gpuscope serve` on the fake NVML's two synthetic GPUs); None after printing `usage`."""
    if len(argv) != 4:
        print(usage)
        return None
    gpuscope, fake, testdata = argv[1:]
    env = dict(os.environ, GPUSCOPE_NVML_LIBRARY=fake,
               GPUSCOPE_FAKE_NVML_FIXTURE=os.path.join(testdata, "synthetic_2gpu.txt"),
               GPUSCOPE_PROC_ROOT=os.path.join(testdata, "proc"))
    return gpuscope, free_port(), env


def main():
    setup = serve_setup(sys.argv, __doc__)
    if not setup:
        return 2
    gpuscope, port, env = setup
    work = tempfile.mkdtemp(prefix="gpuscope-exporter-load-")
    log = open(os.path.join(work, "serve.log"), "w")
    serve = subprocess.Popen([gpuscope, "serve", "--listen", f"127.0.0.1:{port}", "--interval", "1s"],
                             env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            if scrape(port, 1)[1]:
                break
            time.sleep(0.1)
        print(f"machine: {os.cpu_count()} CPUs, {subprocess.run(['uname', '-r'], capture_output=True, text=True).stdout.strip()}; "
              f"date {time.strftime('%Y-%m-%d %H:%M %Z')}",
              flush=True)
        print(f"rss at start: {rss_kib(serve.pid) / 1024:.1f} MiB", flush=True)
        for r in range(3):
            report(f"1000 concurrent scrapes, round {r + 1}", *burst(port))

        slow = Slowloris(port)
        time.sleep(1)
        seq = sorted(scrape(port)[0] * 1000 for _ in range(200))
        report("200 sequential scrapes, 16 slowloris open", seq, 0)
        for r in range(2):
            report(f"1000 concurrent scrapes, 16 slowloris open, round {r + 1}", *burst(port))
        slow.stop.set()
        slow.thread.join()
        answers = []
        for s in slow.socks:  # The server answers 408 once the head timeout (5 s) passed.
            s.settimeout(8)
            try:
                answers.append(s.recv(200).split(b"\r\n")[0].decode() or "closed")
            except OSError as e:
                answers.append(type(e).__name__)
        print(f"slowloris connections ended by the server: {sum(a.startswith('HTTP/1.1 408') or a == 'closed' for a in answers) + slow.cut}/16 "
              f"(answers: {sorted(set(answers))}, {slow.cut} already reset), "
              f"{time.monotonic() - slow.started:.1f} s after they began", flush=True)
        slow.close()

        before = rss_kib(serve.pid)
        peak = [before]
        status, sent = post(port, 200 * 1000 * 1000, peak, serve.pid)
        time.sleep(0.5)
        print(f"200 MB POST /nope: answer {status.decode()!r}, server took {sent / 1e6:.1f} MB of it; "
              f"RSS before {before / 1024:.1f} MiB, peak {peak[0] / 1024:.1f} MiB, "
              f"after {rss_kib(serve.pid) / 1024:.1f} MiB", flush=True)
        before = rss_kib(serve.pid)
        peak = [before]
        threads = [threading.Thread(target=post, args=(port, 200 * 1000 * 1000, peak, serve.pid))
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(0.5)
        print(f"4 x 200 MB POST at once: RSS before {before / 1024:.1f} MiB, peak {peak[0] / 1024:.1f} MiB, "
              f"after {rss_kib(serve.pid) / 1024:.1f} MiB", flush=True)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            head = b"GET /metrics HTTP/1.1\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(10000)) + b"\r\n"
            try:
                s.sendall(head)
            except OSError:
                pass
            try:
                answer = s.recv(200).split(b"\r\n")[0].decode()
            except OSError as e:
                answer = str(e)
        print(f"10,000 headers: answer {answer!r}; RSS {rss_kib(serve.pid) / 1024:.1f} MiB", flush=True)
        lat, fails = burst(port, 200)
        report("after all that, 200 concurrent scrapes", lat, fails)
    finally:
        serve.terminate()
        serve.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
