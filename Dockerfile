# gpuscope's exporter image: `gpuscope serve --listen :9464` (Prometheus metrics of every GPU
# the NVIDIA container runtime gives it; deploy/kubernetes runs it as a DaemonSet).
#   docker build -t gpuscope:0.1.0 .
#   docker run --rm --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=all --pid=host -p 9464:9464 gpuscope:0.1.0
#
# The build stage runs what CI runs on a clean checkout: scripts/build (installs
# scripts/debian-packages from Debian, configures, builds; here without tests and benchmarks),
# then `cmake --install`. Debian 12 has no CUDA toolkit, so the image has no injection
# library: it is for `serve`, `top`, `monitor` and `analyze`, not `gpuscope run`. The runtime
# packages are those of the binary and of the kubelet pod-resources client module it loads
# in a pod (lib/gpuscope/libgpuscope_k8s_grpc.so: gRPC, protobuf).
# scripts/dockerfile_test.py checks these steps against the scripts (no container daemon needed).

FROM debian:12 AS build
WORKDIR /src
COPY . .
RUN scripts/build -DGPUSCOPE_TESTS=OFF -DGPUSCOPE_BENCH=OFF -DGPUSCOPE_CUDA=OFF
RUN cmake --install build --prefix /opt/gpuscope --strip
RUN scripts/runtime-packages /opt/gpuscope/bin/gpuscope /opt/gpuscope/lib/gpuscope/libgpuscope_k8s_grpc.so > /opt/runtime-packages

FROM debian:12-slim
COPY --from=build /opt/runtime-packages /tmp/runtime-packages
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive xargs -a /tmp/runtime-packages apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages
COPY --from=build /opt/gpuscope/ /usr/local/
# NVML comes from the host's driver, mounted by the NVIDIA container runtime
# (NVIDIA_DRIVER_CAPABILITIES=utility is enough).
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=utility
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/gpuscope"]
CMD ["serve", "--listen", ":9464"]
