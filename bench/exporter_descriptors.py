#!/usr/bin/env python3
"""`gpuscope serve` at the default 1,024-descriptor limit under 1,100 idle clients that reconnect
(numbers for docs/validation.md).

usage: exporter_descriptors.py GPUSCOPE_BIN FAKE_NVML_SO TESTDATA_NVML_DIR

The exporter runs with `ulimit -n 1024` against the fake NVML (synthetic_2gpu.txt). This process
(its own, higher limit) opens 1,100 connections that never send a byte, then scrapes /metrics 30
times with curl, 100 ms apart, closing and reopening 20 of the idle connections after each
scrape. Prints each scrape's failures and latency, and the exporter's CPU time meanwhile (a loop
spinning on a full descriptor table shows there).
"""
import os
import resource
import socket
import subprocess
import sys
import time

from exporter_load import scrape, serve_setup


def idle_connection(port):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return s


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    setup = serve_setup(sys.argv, __doc__)
    if not setup:
        return 2
    gpuscope, port, env = setup
    serve = subprocess.Popen(["bash", "-c", f'ulimit -n 1024 && exec "$0" serve --listen 127.0.0.1:{port} '
                              "--interval 1s --pod-resources-socket none", gpuscope],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if scrape(port, 1)[1]:
                break
            time.sleep(0.1)
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
        idle = [idle_connection(port) for _ in range(1100)]
        time.sleep(0.5)
        cpu_before = cpu_seconds(serve.pid)
        latencies, failures = [], 0
        for i in range(30):
            t0 = time.perf_counter()
            r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                                f"http://127.0.0.1:{port}/metrics"], capture_output=True, text=True)
            latencies.append((time.perf_counter() - t0) * 1000)
            failures += r.stdout != "200"
            for k in range(20):
                j = (i * 20 + k) % len(idle)
                idle[j].close()
                idle[j] = idle_connection(port)
            time.sleep(0.1)
        cpu = cpu_seconds(serve.pid) - cpu_before
        latencies.sort()
        print(f"date {time.strftime('%Y-%m-%d %H:%M %Z')}, {os.cpu_count()} CPUs; exporter at 1,024 descriptors, "
              f"1,100 idle clients: 30 curl scrapes, {failures} failed, median {latencies[15]:.0f} ms, "
              f"max {latencies[-1]:.0f} ms; exporter CPU {cpu:.2f} s over {30 * 0.1 + sum(latencies) / 1000:.1f} s")
        for s in idle:
            s.close()
    finally:
        serve.terminate()
        serve.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
