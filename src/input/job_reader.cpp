#include "input/job_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "input/trace_input.h"

namespace gpuscope {
namespace {

constexpr uint64_t kBufferBytes = 48ull << 20;  // Read buffers, batches, the inflater, per file.

// Admits traces into memory while their estimates fit in the budget; one always fits.
class MemoryBudget {
 public:
  explicit MemoryBudget(uint64_t bytes) : budget_(bytes) {}
  void acquire(uint64_t bytes) {
    std::unique_lock lock(mutex_);
    freed_.wait(lock, [&] { return in_use_ == 0 || in_use_ + bytes <= budget_; });
    in_use_ += bytes;
  }
  void release(uint64_t bytes) {
    {
      std::lock_guard lock(mutex_);
      in_use_ -= bytes;
    }
    freed_.notify_all();
  }

 private:
  const uint64_t budget_;
  uint64_t in_use_ = 0;
  std::mutex mutex_;
  std::condition_variable freed_;
};

}  // namespace

uint64_t default_memory_budget() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit) {
    if (key == "MemAvailable:") return std::max<uint64_t>(256ull << 20, kb * 1024 / 2);
  }
  return 4ull << 30;
}

uint64_t estimated_read_bytes(const std::string& path) {
  struct stat st {};
  if (path == "-" || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return kBufferBytes + (1ull << 30);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t json = size;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    unsigned char magic[2] = {0, 0}, isize[4] = {0, 0, 0, 0};
    if (std::fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
      json = size * 10;
      if (size >= 18 && std::fseek(f, -4, SEEK_END) == 0 && std::fread(isize, 1, 4, f) == 4) {
        const uint64_t trailer = isize[0] | (isize[1] << 8) | (isize[2] << 16) | (uint64_t{isize[3]} << 24);
        if (trailer > size) json = trailer;
      }
    }
    std::fclose(f);
  }
  return kBufferBytes + json / 5 * 2;
}

void read_traces(const std::vector<std::string>& paths, const JobReadOptions& options,
                 const std::function<void(size_t, StatusOr<Trace>)>& consume) {
  if (paths.empty()) return;
  const unsigned threads = options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const size_t in_flight = std::min<size_t>(paths.size(), threads);
  const unsigned threads_per_file = std::max<unsigned>(1, threads / static_cast<unsigned>(in_flight));
  MemoryBudget budget(options.max_memory_bytes > 0 ? options.max_memory_bytes : default_memory_budget());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= paths.size()) return;
      const uint64_t estimate = estimated_read_bytes(paths[i]);
      budget.acquire(estimate);
      TraceReadOptions o;
      o.limits = options.limits;
      o.threads = threads_per_file;
      if (JobProgress* p = options.progress) {
        p->files_started.fetch_add(1);
        o.events_read = &p->events_read[i];
        o.progress = [p, i](uint64_t done, uint64_t) { p->bytes_read[i].store(done, std::memory_order_relaxed); };
      }
      consume(i, read_trace_file(paths[i], o));
      budget.release(estimate);
      if (options.progress) options.progress->files_done.fetch_add(1);
    }
  };
  std::vector<std::thread> workers;
  for (size_t t = 1; t < in_flight; ++t) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();
}

}  // namespace gpuscope
