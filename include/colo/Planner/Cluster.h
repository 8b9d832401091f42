//===- Cluster.h - The machine the planner plans for ------------*- C++ -*-===//
//
// A cluster is `nodes` identical nodes of `devicesPerNode` identical devices,
// with one link inside a node and one across nodes (alpha-beta: latency plus
// bytes over bandwidth). Figures are per device and in SI base units: bytes,
// FLOP/s, B/s, seconds. Decimal prefixes throughout: GB = 1e9 bytes, GB/s =
// 1e9 B/s, TFLOP/s = 1e12 FLOP/s. The JSON format is in docs/cluster-format.md.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_PLANNER_CLUSTER_H
#define COLO_PLANNER_CLUSTER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace colo {
namespace planner {

struct ClusterSpec {
  std::string name;
  int64_t nodes = 1, devicesPerNode = 1;
  double deviceMemory = 0;       ///< bytes per device
  double peakFlops16 = 0;        ///< dense bf16/fp16 FLOP/s per device
  double peakFlops32 = 0;        ///< dense fp32 FLOP/s per device
  double memoryBandwidth = 0;    ///< B/s per device
  double intraBandwidth = 0;     ///< B/s per device, one direction, in a node
  double intraLatency = 0;       ///< s
  double interBandwidth = 0;     ///< B/s per device, one direction, across
                                 ///< nodes (its share of the node's NICs)
  double interLatency = 0;       ///< s
  double hostMemory = 0;         ///< bytes per node
  double pcieBandwidth = 0;      ///< B/s per device, host<->device
  double matmulEfficiency = 0.8; ///< achievable fraction of peak, large GEMMs
  double memoryEfficiency = 0.8; ///< achievable fraction of memoryBandwidth

  int64_t worldSize() const { return nodes * devicesPerNode; }
};

/// The names clusterPreset accepts, in a fixed order.
std::vector<std::string> clusterPresetNames();

/// A named preset: one node of 8 GPUs for the GPU presets; `local-cpu` is this
/// machine as measured by measureLocalCpu (once per process), one node with one
/// device per logical CPU. Unknown names fail with the list of presets.
llvm::Expected<ClusterSpec> clusterPreset(llvm::StringRef name);

/// Reads a cluster description in JSON (docs/cluster-format.md). Errors name
/// the file and the field.
llvm::Expected<ClusterSpec> loadClusterFile(llvm::StringRef path);

/// As loadClusterFile, from text; `what` names the source in messages (a file
/// name) and gives the default name (its stem) when there is neither `name`
/// nor `preset`.
llvm::Expected<ClusterSpec> parseCluster(llvm::StringRef json,
                                         llvm::StringRef what);

/// NAME, NAME:NODESxDEVICES (e.g. a100-80g:128x8) or a path to a JSON file.
/// A spec containing '/' or ending in ".json" is always a path.
llvm::Expected<ClusterSpec> resolveCluster(llvm::StringRef spec);

/// The cluster in the file format of docs/cluster-format.md (without
/// `preset`): parseCluster reads it back to the same spec.
llvm::json::Value toJSON(const ClusterSpec &spec);

/// A human-readable table with units (GB, TFLOP/s, GB/s, us).
void printCluster(const ClusterSpec &spec, llvm::raw_ostream &os);

/// Measures this machine, one device per logical CPU (a few seconds at most):
/// single-core sgemm throughput (OpenBLAS, n = 1024, best of a few
/// repetitions) as both peak figures; STREAM-like triad bandwidth with every
/// core busy, shared out per core; a copy between two threads through a shared
/// buffer for the intra-node link, and a ping-pong of a flag for its latency.
/// The figures are already achievable rates, so both efficiencies are 1.
ClusterSpec measureLocalCpu();

} // namespace planner
} // namespace colo

#endif // COLO_PLANNER_CLUSTER_H
