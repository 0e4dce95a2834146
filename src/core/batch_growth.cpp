// The wave model of docs/design.md, "Serving": batch_growth.h.
#include "core/batch_growth.h"

#include <algorithm>
#include <cmath>

#include "core/occupancy.h"

namespace gpuscope {

double blocks_per_wave(const Device* dev, const Kernel& k) {
  if (!dev || !dev->num_sms || *dev->num_sms <= 0 || !dev->max_threads_per_sm || !k.has_grid()) return 0;
  const std::optional<Occupancy> occ = theoretical_occupancy(*dev, k);
  if (!occ) return 0;
  const double warps_per_block = std::ceil(static_cast<double>(k.block.volume()) / 32.0);
  const double resident = std::floor(occ->fraction * (*dev->max_threads_per_sm / 32.0) / warps_per_block + 1e-9);
  return std::max(1.0, resident) * *dev->num_sms;
}

BatchGrowth grow_per_sequence_kernels(const DeviceContext& ctx, double growth, const std::vector<bool>& skip) {
  BatchGrowth out;
  growth = std::max(1.0, growth);
  for (size_t i = 0; i < ctx.kernels.size(); ++i) {
    if (i < skip.size() && skip[i]) continue;
    const Kernel& k = *ctx.kernels[i];
    const double ns = static_cast<double>(k.end_ns - k.start_ns);
    const double wave = blocks_per_wave(ctx.device, k);
    if (wave <= 0) {
      out.unknown_ns += ns;
      out.before_ns += ns;
      out.after_ns += ns;
      continue;
    }
    const double blocks = static_cast<double>(k.grid.volume());
    const double waves_before = std::ceil(blocks / wave), waves_after = std::ceil(blocks * growth / wave);
    out.before_ns += ns;
    out.after_ns += ns * waves_after / waves_before;
    ++out.kernels;
  }
  return out;
}

}  // namespace gpuscope
