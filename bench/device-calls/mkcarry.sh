#!/usr/bin/env bash
# Gathers what a device call needs into DIR (e.g. .carry-s12; add it to .git/info/exclude):
# gpuscope, the injection libraries, the Python bootstrap (DIR/python) and the shared libraries
# they load that a bare GPU machine may lack (everything ldd finds outside glibc, the C++
# runtime and the CUDA driver), stripped; DIR/COMMIT names the commit built.
# Usage: bench/device-calls/mkcarry.sh DIR [BUILD]   (BUILD defaults to ./build)
set -euo pipefail
dir=${1:?usage: mkcarry.sh DIR [BUILD]}
build=${2:-build}
rm -rf "$dir"
mkdir -p "$dir"
cp "$build/src/cli/gpuscope" "$dir/"
cp "$build"/src/cupti/libgpuscope_*.so "$dir/"
cp -r "$build/src/cupti/python" "$dir/python"
rm -rf "$dir/python/__pycache__"
for f in "$dir"/gpuscope "$dir"/libgpuscope_*.so; do
  ldd "$f" | awk '/=> \//{print $3}'
done | sort -u | grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*|libcuda)\.so' |
  while read -r lib; do cp -L "$lib" "$dir/"; done
strip --strip-unneeded "$dir"/gpuscope "$dir"/*.so* 2>/dev/null || true
git rev-parse --short HEAD > "$dir/COMMIT"
du -sh "$dir"
