#!/usr/bin/env python3
"""`gpuscope serve` as a user runs it, against the fake NVML and a fake kubelet (a separate
process serving the real pod-resources proto on a unix socket):

1. The binary finds its gRPC client module (libgpuscope_k8s_grpc.so) in its library folders
   (the build tree's, or lib/gpuscope when run on an installed tree by scripts/install-test)
   and /metrics carries the kubelet's pod, namespace and container labels.
2. The same binary copied alone into an empty folder (no module anywhere it looks): one
   warning line naming the module, where it looked and what to do; /metrics is served
   without pod labels; the process keeps running.

Usage: serve_pods_test.py GPUSCOPE FAKE_NVML_SO TESTDATA_NVML_DIR FAKE_KUBELET
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

GPU0 = "GPU-00000000-1111-2222-3333-444444444444"  # testdata/nvml/synthetic_2gpu.txt
GPU1 = "GPU-55555555-6666-7777-8888-999999999999"
POD0 = 'pod="trainer-0",namespace="ml",container="pytorch"'


def start_kubelet(fake_kubelet, folder):
    pods = [{"namespace": "ml", "name": "trainer-0",
             "containers": [{"name": "pytorch", "resource": "nvidia.com/gpu", "devices": [GPU0]}]},
            {"namespace": "serving", "name": "llm-7f9c",
             "containers": [{"name": "vllm", "resource": "nvidia.com/gpu", "devices": [GPU1]}]}]
    with open(os.path.join(folder, "pods.json"), "w") as f:
        json.dump(pods, f)
    p = subprocess.Popen([fake_kubelet, folder, str(os.getpid())], stdout=subprocess.PIPE, text=True)
    if p.stdout.readline() != "ready\n":
        raise SystemExit("serve_pods_test: the fake kubelet did not start")
    return p


def serve(gpuscope, env, socket_path, log_path):
    log = open(log_path, "w")
    p = subprocess.Popen([gpuscope, "serve", "--listen", "127.0.0.1:0", "--interval", "200ms",
                          "--pod-resources-socket", socket_path],
                         env=env, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        m = re.search(r"serving http://([^/]+)/metrics", open(log_path).read())
        if m:
            return p, m.group(1)
        if p.poll() is not None:
            break
        time.sleep(0.05)
    p.kill()
    raise SystemExit(f"serve_pods_test: gpuscope serve did not start: {open(log_path).read()}")


def metrics(address):
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as r:
        return r.read().decode()


def main():
    gpuscope, fake_nvml, testdata, fake_kubelet = sys.argv[1:5]
    errors = []
    env = dict(os.environ, GPUSCOPE_NVML_LIBRARY=fake_nvml,
               GPUSCOPE_FAKE_NVML_FIXTURE=os.path.join(testdata, "synthetic_2gpu.txt"),
               GPUSCOPE_PROC_ROOT=os.path.join(testdata, "proc"))
    env.pop("GPUSCOPE_LIB_DIR", None)
    work = tempfile.mkdtemp(prefix="gpuscope-serve-pods-", dir="/tmp")  # Socket paths: 108 bytes.
    procs = []
    try:
        kubelet = start_kubelet(fake_kubelet, work)
        procs.append(kubelet)
        sock = os.path.join(work, "kubelet.sock")

        # 1. The module is found: pod labels.
        p, address = serve(gpuscope, env, sock, os.path.join(work, "serve.log"))
        procs.append(p)
        text = metrics(address)
        if f'uuid="{GPU0}",model="NVIDIA H200",{POD0}' not in text:
            errors.append(f"with the module: no pod labels on GPU 0 in /metrics:\n{text[:1500]}")
        log = open(os.path.join(work, "serve.log")).read()
        if "labels from the kubelet's pod-resources API" not in log or "warning: kubelet" in log:
            errors.append(f"with the module: unexpected log: {log}")
        p.terminate()
        p.wait(timeout=10)

        # 2. No module: one warning, served without pod labels.
        alone = os.path.join(work, "alone")
        os.mkdir(alone)
        shutil.copy2(gpuscope, alone)
        p, address = serve(os.path.join(alone, os.path.basename(gpuscope)), env, sock,
                           os.path.join(work, "alone.log"))
        procs.append(p)
        time.sleep(0.6)  # Several samples.
        text = metrics(address)
        if "gpuscope_gpu_utilization_ratio{" not in text or 'pod="' in text:
            errors.append(f"without the module: /metrics should have GPU series and no pod labels:\n{text[:1500]}")
        if p.poll() is not None:
            errors.append("without the module: gpuscope serve exited")
        log = open(os.path.join(work, "alone.log")).read()
        warnings = [l for l in log.splitlines() if "warning: kubelet pod-resources client" in l]
        if len(warnings) != 1 or "libgpuscope_k8s_grpc.so not found (looked in " + alone not in warnings[0] \
                or "GPUSCOPE_LIB_DIR" not in warnings[0]:
            errors.append(f"without the module: expected one warning naming the module and {alone}: {log}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    for e in errors:
        print("serve_pods_test: " + e)
    print(f"serve_pods_test: {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
