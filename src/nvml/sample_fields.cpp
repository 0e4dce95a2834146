#include "nvml/sample_fields.h"

namespace gpuscope::nvml {

namespace {
template <typename T>
std::optional<double> as_double(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}
}  // namespace

const std::vector<SampleField>& device_sample_fields() {
#define GPUSCOPE_FIELD(member, type, gpm, unit) \
  SampleField{#member, gpm, SampleUnit::unit, [](const DeviceSample& s) { return as_double(s.member); }},
  static const std::vector<SampleField> kFields = {GPUSCOPE_DEVICE_SAMPLE_FIELDS(GPUSCOPE_FIELD)};
#undef GPUSCOPE_FIELD
  return kFields;
}

}  // namespace gpuscope::nvml
