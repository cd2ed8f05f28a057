#pragma once
/// @file drift_json.hpp
/// Pieces of a drift result (drift/drift.hpp) as JSON, shared by `memhealth drift --format json`
/// and the Python module's `drift`: the norm summary of one sample, the MMD test and the centroid
/// cosine, keys in the order below (nlohmann::ordered_json).

#include <nlohmann/json.hpp>

#include <cmath>

#include "memhealth/drift/drift.hpp"

namespace memhealth {

/// One sample's norms: rows, mean, sd, min, max (Euclidean norms of the rows) and unit_share
/// (share of rows with a norm within the unit tolerance). Never throws beyond std::bad_alloc.
inline nlohmann::ordered_json norm_summary_json(const norm_summary& n) {
  return nlohmann::ordered_json{{"rows", n.n},  {"mean", n.mean}, {"sd", n.sd},
                                {"min", n.min}, {"max", n.max},   {"unit_share", n.unit_share}};
}

/// The MMD test of a drift result: mmd, mmd2, p_value, bandwidth, noise_floor, splits, exact;
/// null when the test did not run (samples of different dimension, or too few rows).
inline nlohmann::ordered_json drift_mmd_json(const drift_result& dr) {
  if (!dr.mmd) return nullptr;
  return {{"mmd", dr.mmd->mmd},
          {"mmd2", dr.mmd->mmd2},
          {"p_value", dr.mmd->p_value},
          {"bandwidth", dr.mmd->bandwidth},
          {"noise_floor", dr.mmd->noise_floor},
          {"splits", dr.mmd->splits},
          {"exact", dr.mmd->exact}};
}

/// The cosine between the two samples' mean vectors; null when it is undefined (NaN: a zero mean
/// or different dimensions).
inline nlohmann::ordered_json centroid_cosine_json(const drift_result& dr) {
  return std::isnan(dr.centroid_cosine) ? nlohmann::ordered_json(nullptr)
                                        : nlohmann::ordered_json(dr.centroid_cosine);
}

}  // namespace memhealth
