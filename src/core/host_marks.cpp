#include "core/host_marks.h"

#include <algorithm>

#include "core/run_protocol.h"

namespace gpuscope {
namespace {

namespace rp = run_protocol;

// The larger of a value so far and a mark's.
void keep_max(std::optional<int64_t>& most, std::optional<int64_t> v) {
  if (v) most = std::max(most.value_or(*v), *v);
}

}  // namespace

std::optional<int64_t> mark_field(std::string_view fields, std::string_view key) {
  for (size_t at = 0; at < fields.size();) {
    const size_t comma = std::min(fields.find(',', at), fields.size());
    const std::string_view field = fields.substr(at, comma - at);
    at = comma + 1;
    if (field.size() <= key.size() || !field.starts_with(key) || field[key.size()] != '=') continue;
    int64_t v = 0;
    size_t digits = 0;
    for (char c : field.substr(key.size() + 1)) {
      if (c < '0' || c > '9' || v > 1'000'000'000'000) break;
      v = v * 10 + (c - '0');
      ++digits;
    }
    return digits ? std::optional<int64_t>(v) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<int64_t> WindowMarks::untraced_step_ns() const {
  const int64_t us = std::max(untraced_step_us.value_or(0), untraced_device_step_us.value_or(0));
  return us > 0 ? std::optional<int64_t>(us * 1000) : std::nullopt;
}

std::optional<int64_t> AllocatorMarks::traced_retries() const {
  if (!retries) return std::nullopt;
  return std::max<int64_t>(0, *retries - retries_at_open.value_or(0));
}

HostMarks parse_host_marks(const Trace& trace) {
  HostMarks marks;
  LoaderMarks& loader = marks.loader;
  WindowMarks& window = marks.window;
  std::optional<int64_t> gloo;
  for (StringId id = 0; id < trace.strings.size(); ++id) {
    std::string_view s = trace.strings.view(id);
    if (!s.starts_with(rp::kHostMark.prefix)) continue;
    s.remove_prefix(rp::kHostMark.prefix.size());
    const auto field = [s](std::string_view key) { return mark_field(s, key); };

    if (!loader.torch_threads) loader.torch_threads = field(rp::kKeyTorchThreads);
    if (!loader.cpus) loader.cpus = field(rp::kKeyCpus);
    if (!loader.workers) loader.workers = field(rp::kKeyLoaderWorkers);
    if (!loader.one_thread_us) {
      if (const std::optional<int64_t> us = field(rp::kKeyLoaderOneThreadUs); us && *us > 0) {
        loader.one_thread_us = us;
        loader.one_thread_batches = field(rp::kKeyBatches).value_or(0);
        loader.one_thread_cpu_us = field(rp::kKeyLoaderOneThreadCpuUs);
      }
    }
    if (!loader.pool_us) {
      const std::optional<int64_t> us = field(rp::kKeyLoaderPoolUs), w = field(rp::kKeyPoolWorkers);
      if (us && *us > 0 && w && *w > 0) {
        loader.pool_us = us;
        loader.pool_workers = *w;
        loader.pool_batches = field(rp::kKeyBatches).value_or(0);
      }
    }
    const std::optional<int64_t> cpu = field(rp::kKeyLoaderCpuUs), wall = field(rp::kKeyLoaderWallUs);
    if (cpu && wall) loader.batch_cpu_wall_us.emplace(id, std::make_pair(*cpu, *wall));

    keep_max(marks.dist_world_size, field(rp::kKeyDistWorldSize));
    keep_max(gloo, field(rp::kKeyDistGloo));

    keep_max(window.untraced_step_us, field(rp::kKeyUntracedStepUs));
    keep_max(window.untraced_device_step_us, field(rp::kKeyUntracedDeviceStepUs));
    keep_max(window.optimizer_steps, field(rp::kKeyOptimizerSteps));
    keep_max(window.time_window_us, field(rp::kKeyTimeWindowUs));
    if (field(rp::kKeyNoSteps).value_or(0) > 0) window.no_steps = true;
    keep_max(window.loop_period_ns, field(rp::kKeyLoopPeriodNs));
    keep_max(window.capped_after_steps, field(rp::kKeyCappedAfterSteps));
    keep_max(window.capped_after_us, field(rp::kKeyCappedAfterUs));

    AllocatorMarks& alloc = marks.allocator;
    keep_max(alloc.retries, field(rp::kKeyAllocRetries));
    keep_max(alloc.retries_at_open, field(rp::kKeyAllocRetriesAtOpen));
    if (field(rp::kKeyAllocUncached).value_or(0) > 0) alloc.uncached = true;
    if (field(rp::kKeyAllocExpandable).value_or(0) > 0) alloc.expandable = true;
  }
  marks.dist_gloo = gloo.value_or(0) > 0;
  return marks;
}

bool py_sample_in_data_loading(std::string_view mark_name) {
  if (!mark_name.starts_with(rp::kPySampleMark.prefix)) return false;
  mark_name.remove_prefix(rp::kPySampleMark.prefix.size());
  return mark_name.starts_with(rp::kPySampleDataTag) && mark_name.size() > rp::kPySampleDataTag.size() &&
         mark_name[rp::kPySampleDataTag.size()] == ';';
}

std::string py_sample_label(std::string_view mark_name) {
  if (mark_name.starts_with(rp::kPySampleMark.prefix)) mark_name.remove_prefix(rp::kPySampleMark.prefix.size());
  const size_t semi = mark_name.find(';');
  if (semi == std::string_view::npos) return "";
  std::string_view frames = mark_name.substr(semi + 1);
  frames = frames.substr(0, frames.find('|'));
  if (frames.empty()) return "";
  return std::string(frames) + " (Python)";
}

}  // namespace gpuscope
