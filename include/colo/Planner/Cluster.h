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
#include <optional>
#include <string>
#include <vector>

namespace colo {
namespace planner {

/// What a kernel launch costs whatever its size (what bounds small models):
/// the analytic model charges it per op, the compiled program's timeline per
/// step.
constexpr double kKernelLaunchSeconds = 4e-6;

/// The share of a device's memory a plan may fill: a caching allocator (the
/// published runs' PyTorch) loses the rest to fragmentation. 8% is an
/// assumption, not a fit: it depends on the allocation pattern (up to 43%
/// with recompute and virtual pipelines, Huang et al. 2025, arXiv
/// 2507.16274); every published run of the calibration file fits under it.
constexpr double kAllocatableShare = 0.92;

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
  /// Output tiles of a matrix product the device computes at once (its SMs,
  /// one 256 x 128 tile each): a product's tiles run in waves of this many,
  /// the last partly empty. 0 where products do not run in waves (a CPU).
  double gemmWaveTiles = 0;
  double memoryEfficiency = 0.8; ///< achievable fraction of memoryBandwidth
  /// Achievable fraction of the peak in a fused attention kernel, on the
  /// FLOPs it computes (a causal one skips the tiles after the diagonal):
  /// its forward and its backward, which recomputes the scores, together
  /// (fusedAttention = 1; unfused attention runs as matmuls). The default
  /// is the A100's: fitted by bench/fit_attention.py on the calibration
  /// file's llm-foundry A100 rows in bf16 (MPT's fused attention, 512 to
  /// 65536 tokens; 6.0% mean absolute error on the rows each fold did not
  /// see), as no published kernel benchmark gives it for the kernels those
  /// runs used. The presets without runs to fit (V100, RTX 3090, RTX 2060)
  /// keep it.
  double attentionEfficiency = 0.29;
  /// How much longer compute takes while a collective runs beside it (the
  /// collective's kernels take SMs and memory bandwidth from it): 0.189 on
  /// the GPU presets, the mean slowdown measured on A100 and H100 training
  /// GPT and Llama ("Characterizing Compute-Communication Overlap in
  /// GPU-Accelerated Distributed Deep Learning", arXiv 2507.03114); 0 where
  /// the collectives do not run beside compute (local-cpu: the ranks' MPI
  /// calls).
  double overlapSlowdown = 0;
  /// Bytes per device that the software reserves beyond the model's tensors:
  /// CUDA context, NCCL and cuBLAS workspaces, allocator slack on a GPU.
  double workspace = double(1 << 30);
  /// 1 where the collectives stage what they receive in the device's memory
  /// (colo's MPI rings on `local-cpu`: one chunk of the largest reduction,
  /// two for a reduce-scatter over more than two ranks), 0 where the
  /// library's buffers are part of the workspace (NCCL on a GPU).
  double collectiveStaging = 0;
  /// 1 where a matrix product copies an operand it reads transposed into
  /// scratch memory of the device beside the step's tensors (oneDNN's
  /// matmul on `local-cpu`: the largest is the head's weight gradient
  /// reading the logits' gradient); 0 where the library reads it in place
  /// (cuBLASLt's transpose flags).
  double gemmScratch = 0;
  /// 1 where attention runs as one fused kernel (FlashAttention, cuDNN's
  /// fused attention: what colo's CUDA target calls, and every GPU training
  /// stack of the published runs), which keeps no s x s probabilities for
  /// the backward; 0 where the step computes attention as the ops it stands
  /// for and keeps them (colo's CPU path, `local-cpu`).
  double fusedAttention = 0;
  /// 1 where the loss is one fused kernel over the logits in the training
  /// precision (flash-attn's cross-entropy, llm-foundry's `fused_crossentropy`;
  /// what colo's CUDA target generates), which keeps no float32 copy of them
  /// and writes their gradient in the training precision; 0 where the loss
  /// keeps the float32 log-probabilities and their float32 gradient (colo's
  /// CPU path, PyTorch's cross-entropy under autocast).
  double fusedLoss = 0;
  /// 1 where chains of elementwise ops run as fused kernels that keep their
  /// intermediates in registers (colo's compiled CPU kernels, `local-cpu`);
  /// 0 where each op is a kernel of its own (PyTorch eager, the stacks of
  /// the published GPU runs the presets are checked against).
  double fusedElementwise = 0;
  /// 1 where the devices are this machine's CPU ranks (`local-cpu`, and a
  /// file made from it): the planner times the model's convolutions here as
  /// colo run computes them (timeConvolutions, predictStepTimes) instead of
  /// charging their FLOPs at the GEMM rate.
  double timedHere = 0;

  int64_t worldSize() const { return nodes * devicesPerNode; }
};

/// The names clusterPreset accepts, in a fixed order.
std::vector<std::string> clusterPresetNames();

/// A named preset: one node of 8 GPUs for the GPU presets; `local-cpu` is this
/// machine as measured by measureLocalCpu (once per process), one node with one
/// device per logical CPU. Unknown names fail with the list of presets.
llvm::Expected<ClusterSpec> clusterPreset(llvm::StringRef name);

/// The GPU preset of a device that CUDA names `gpu` ("NVIDIA H200",
/// "NVIDIA A100-SXM4-80GB"); none for GPUs without one.
std::optional<std::string> clusterPresetForGpu(llvm::StringRef gpu);

/// The preset `name` with another shape. For a GPU preset only the counts
/// change. For `local-cpu` a device is one rank of `colo run` and the machine's
/// cores are shared out among the ranks of a node: see shapeLocalCpu.
llvm::Expected<ClusterSpec> clusterPreset(llvm::StringRef name, int64_t nodes,
                                          int64_t devicesPerNode);

/// The figures measureLocalCpu took on this machine (`measured`: one device
/// per core, plus the all-core GEMM rate) for `devicesPerNode` ranks sharing
/// the node's cores, as `colo run` runs them: a rank gets T = max(1, cores /
/// ranks) BLAS threads, and with more ranks than cores the ranks time-share
/// them. Per device:
///  - peak FLOP/s: the GEMM rate of T threads (interpolated linearly between
///    the one-core and the all-core measurement), times cores / ranks when
///    ranks exceed the cores; 16-bit FLOP/s in the measured bf16 / f32
///    ratio of one core;
///  - memory bandwidth: one core's share of the all-core triad, times
///    cores / ranks when ranks exceed the cores (colo's generated kernels run
///    on one thread per rank, however many BLAS threads it has);
///  - intra-node link: the thread-to-thread copy rate, also scaled down when
///    ranks exceed the cores (copies need a core);
///  - memory: the host's divided by the ranks on the node.
ClusterSpec shapeLocalCpu(const ClusterSpec &measured, double allCoreGemmFlops,
                          int64_t nodes, int64_t devicesPerNode);

/// Reads a cluster description in JSON (docs/cluster-format.md). Errors name
/// the file and the field.
llvm::Expected<ClusterSpec> loadClusterFile(llvm::StringRef path);

/// As loadClusterFile, from text; `what` names the source in messages (a file
/// name) and gives the default name (its stem) when there is neither `name`
/// nor `preset`.
llvm::Expected<ClusterSpec> parseCluster(llvm::StringRef json,
                                         llvm::StringRef what);

/// An error if `json` nests arrays and objects deeper than 64 levels: no
/// plan or cluster file does, and llvm::json's parser recurses once per
/// level, so a deep file would overflow the stack.
llvm::Error checkJsonNesting(llvm::StringRef json, llvm::StringRef what);

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
/// `allCoreGemmFlops`, when given, receives the sgemm rate with every core.
ClusterSpec measureLocalCpu(double *allCoreGemmFlops = nullptr);

} // namespace planner
} // namespace colo

#endif // COLO_PLANNER_CLUSTER_H
