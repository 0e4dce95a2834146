# gpuscope's exporter image: `gpuscope serve --listen :9464` (Prometheus metrics of every GPU
# the NVIDIA container runtime gives it; deploy/kubernetes runs it as a DaemonSet).
#   docker build -t gpuscope:0.1.0 .
#   docker run --rm --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=all --pid=host -p 9464:9464 gpuscope:0.1.0
#
# The build stage runs what CI runs on a clean checkout: scripts/build (installs the Debian
# packages a build without tests and benchmarks needs, configures, builds), then
# `cmake --install`. The packages are installed before the source is copied, so that editing
# the source does not re-run apt. Debian 12 has no CUDA toolkit, so the image has no injection
# library: it is for `serve`, `top`, `monitor` and `analyze`, not `gpuscope run`. The runtime
# packages are those of the binary and of the kubelet pod-resources client module it loads
# in a pod (lib/gpuscope/libgpuscope_k8s_grpc.so: gRPC, protobuf).
# scripts/dockerfile_test.py checks these steps against the scripts and hadolint lints this
# file (ctest dockerfile_steps, dockerfile_lint; no container daemon needed).

FROM debian:12 AS build
WORKDIR /src
COPY scripts/build scripts/debian-packages scripts/
RUN scripts/build --packages-only -DGPUSCOPE_TESTS=OFF -DGPUSCOPE_BENCH=OFF -DGPUSCOPE_CUDA=OFF
COPY . .
RUN scripts/build -DGPUSCOPE_TESTS=OFF -DGPUSCOPE_BENCH=OFF -DGPUSCOPE_CUDA=OFF \
 && cmake --install build --prefix /opt/gpuscope --strip \
 && scripts/runtime-packages /opt/gpuscope/bin/gpuscope /opt/gpuscope/lib/gpuscope/libgpuscope_k8s_grpc.so \
      > /opt/runtime-packages

FROM debian:12-slim
LABEL org.opencontainers.image.title="gpuscope" \
      org.opencontainers.image.description="Prometheus exporter of GPU SM, tensor and memory activity (gpuscope serve)" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/runtime-packages /tmp/runtime-packages
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive xargs -a /tmp/runtime-packages apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages \
 && groupadd --system --gid 10001 gpuscope \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin gpuscope
COPY --from=build /opt/gpuscope/ /usr/local/
# NVML comes from the host's driver, mounted by the NVIDIA container runtime
# (NVIDIA_DRIVER_CAPABILITIES=utility is enough).
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=utility
# Not root. NVML needs only the device nodes the runtime mounts; the kubelet's pod-resources
# socket is root's, so the DaemonSet runs the container as root (deploy/kubernetes).
USER 10001:10001
EXPOSE 9464
# Healthy once /metrics answers 200 (the first sample is taken; 503 before). bash's /dev/tcp:
# the slim image has no HTTP client. Probes :9464, the port CMD serves on.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9464 && printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3 && read -r -t 5 status <&3 && [[ $status == 'HTTP/1.1 200 '* ]]"]
ENTRYPOINT ["/usr/local/bin/gpuscope"]
CMD ["serve", "--listen", ":9464"]
