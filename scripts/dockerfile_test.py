#!/usr/bin/env python3
"""ctest dockerfile_steps: the Dockerfile builds the way CI does, without a container daemon.

- Two stages on Debian 12: `debian:12 AS build`, then `debian:12-slim`.
- The build stage's RUN lines are exactly: scripts/build (what scripts/test, and so CI, runs
  on a clean checkout: installs scripts/debian-packages, configures, builds) with cmake
  options, `cmake --install build`, and scripts/runtime-packages on the installed binary.
- Those cmake options configure this tree (a real configure into a temp folder).
- scripts/runtime-packages works on the binary and the pod-resources client module built
  here and names the gRPC runtime (the module's: the binary links no gRPC), and the
  Dockerfile's runtime-packages line names the installed module.
- The image runs `gpuscope serve --listen :9464`, and the binary accepts those arguments.
- .dockerignore keeps build trees out of the build context.
Usage: dockerfile_test.py GPUSCOPE_BINARY K8S_GRPC_MODULE
"""
import os
import shlex
import subprocess
import sys
import tempfile
import json

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def main():
    binary, module = sys.argv[1], sys.argv[2]
    errors = []
    ins = instructions(os.path.join(SRC, "Dockerfile"))
    froms = [(i, a) for i, (k, a) in enumerate(ins) if k == "FROM"]
    if [a for _, a in froms] != ["debian:12 AS build", "debian:12-slim"]:
        errors.append(f"stages must be 'debian:12 AS build' then 'debian:12-slim', not {[a for _, a in froms]}")
    build_runs = [a for k, a in ins[froms[0][0]:froms[1][0]] if k == "RUN"] if len(froms) == 2 else []
    if len(build_runs) != 3:
        errors.append(f"the build stage must have 3 RUN lines (scripts/build, cmake --install, "
                      f"scripts/runtime-packages), has {build_runs}")
    else:
        build_argv = shlex.split(build_runs[0])
        if build_argv[0] != "scripts/build":
            errors.append(f"the build stage must run scripts/build first, runs {build_runs[0]!r}")
        if "scripts/build" not in open(os.path.join(SRC, "scripts", "test")).read():
            errors.append("scripts/test (CI) no longer runs scripts/build; the Dockerfile no longer builds as CI does")
        if not build_runs[1].startswith("cmake --install build "):
            errors.append(f"second RUN must be cmake --install build, is {build_runs[1]!r}")
        if not build_runs[2].startswith("scripts/runtime-packages "):
            errors.append(f"third RUN must be scripts/runtime-packages, is {build_runs[2]!r}")
        elif "/opt/gpuscope/lib/gpuscope/libgpuscope_k8s_grpc.so" not in shlex.split(build_runs[2]):
            errors.append(f"scripts/runtime-packages must also be given the installed pod-resources client "
                          f"module (lib/gpuscope/libgpuscope_k8s_grpc.so): {build_runs[2]!r}")
        # The options given to scripts/build configure this tree (they reach cmake unchanged).
        with tempfile.TemporaryDirectory() as b:
            r = subprocess.run(["cmake", "-S", SRC, "-B", b] + build_argv[1:], capture_output=True, text=True)
            if r.returncode != 0:
                errors.append(f"cmake with the Dockerfile's options {build_argv[1:]} fails: {r.stderr[-2000:]}")
    if not any(k == "COPY" and a == ". ." for k, a in ins[:froms[1][0] if len(froms) == 2 else None]):
        errors.append("the build stage must COPY the checkout (COPY . .)")

    r = subprocess.run([os.path.join(SRC, "scripts", "runtime-packages"), binary, module], capture_output=True,
                       text=True)
    if r.returncode != 0 or "libgrpc++1.51" not in r.stdout.split():
        errors.append(f"scripts/runtime-packages {binary} {module}: rc {r.returncode}, {r.stdout!r} {r.stderr!r}")

    entry = [json.loads(a) for k, a in ins if k == "ENTRYPOINT"]
    cmd = [json.loads(a) for k, a in ins if k == "CMD"]
    argv = (entry[-1] if entry else []) + (cmd[-1] if cmd else [])
    if argv != ["/usr/local/bin/gpuscope", "serve", "--listen", ":9464"]:
        errors.append(f"the image must run gpuscope serve --listen :9464, runs {argv}")
    # The arguments parse: without NVML the binary stops at loading it, not at the arguments.
    env = dict(os.environ, GPUSCOPE_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1")
    r = subprocess.run([binary] + argv[1:] + ["--pod-resources-socket", "none"], capture_output=True, text=True,
                       env=env, timeout=30)
    if r.returncode != 2 or "--listen" in r.stderr or "NVML" not in r.stderr and "nvidia-ml" not in r.stderr:
        errors.append(f"gpuscope {' '.join(argv[1:])} without NVML: rc {r.returncode}, stderr {r.stderr!r}")

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
