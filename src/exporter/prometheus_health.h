// The health families of the exposition (core/device_health.h from the sampler's health
// collector, and the named clocks-event reasons of each DeviceSample), in gpuscope names and,
// for --dcgm-compat, in dcgm-exporter's (etc/default-counters.csv: names, types, units).
// Same contract as prometheus.h: HELP and TYPE once per family, a family only when some GPU
// has a reading, an unsupported reading has no series (never 0).
#pragma once

#include <string>
#include <vector>

#include "exporter/prometheus.h"

namespace gpuscope::exporter {

// `labels[i]`: the label set of device i (prometheus.cpp's device_labels / dcgm_labels).
void render_health(std::string& out, const ExpositionInput& in, const std::vector<std::string>& labels);
void render_health_dcgm(std::string& out, const ExpositionInput& in, const std::vector<std::string>& labels);

}  // namespace gpuscope::exporter
