// Host ns per cudaMalloc + cudaFree pair (64 MiB by default), median over rounds: run plain and
// under `gpuscope run` to see what tracing adds to allocation calls (bench/device-calls/call22.sh).
// Build: g++ -O2 -I/usr/local/cuda/include alloc_cost.cpp -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lpthread
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const size_t bytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64) << 20;
  const int pairs = 50, rounds = 9;
  if (cudaFree(nullptr) != cudaSuccess) {
    std::fprintf(stderr, "alloc_cost: no usable GPU\n");
    return 2;
  }
  std::vector<double> per_pair;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < pairs; ++i) {
      void* p = nullptr;
      if (cudaMalloc(&p, bytes) != cudaSuccess || cudaFree(p) != cudaSuccess) return 2;
    }
    const auto t1 = std::chrono::steady_clock::now();
    per_pair.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / pairs);
  }
  std::sort(per_pair.begin(), per_pair.end());
  std::printf("{\"alloc_pair_ns\": %.0f, \"min_ns\": %.0f, \"max_ns\": %.0f, \"mib\": %zu}\n", per_pair[rounds / 2],
              per_pair.front(), per_pair.back(), bytes >> 20);
  return 0;
}
