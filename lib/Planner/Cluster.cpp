//===- Cluster.cpp - Cluster presets, files and measurement -------------===//
//
// Presets carry vendor data-sheet figures (peak, not achievable: the
// efficiencies say how much of the peak a large GEMM or a streaming kernel
// gets). Units: decimal GB (1e9 bytes), GB/s (1e9 B/s), TFLOP/s (1e12 FLOP/s).
// A GPU's memory is what the vendor's "GB" means: NVIDIA's "80 GB" A100 has
// 80 GiB of HBM (nvidia-smi: 81920 MiB). The CUDA context and the libraries'
// buffers are the workspace; the allocator's fragmentation is the cost
// model's (kAllocatableShare).
//
//===----------------------------------------------------------------------===//

#include "colo/Planner/Cluster.h"
#include "colo/Planner/OpTimes.h"
#include "colo/Runtime/CpuGemm.h"
#include "colo/Runtime/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <thread>
#include <vector>

#include <unistd.h>


using namespace colo::planner;
using llvm::Expected;
using llvm::StringRef;

namespace {
constexpr double GB = 1e9;      // bytes, and GB/s in B/s
constexpr double GiB = double(1 << 30); // a GPU's memory
constexpr double TFLOPS = 1e12; // FLOP/s
constexpr double US = 1e-6;     // s

llvm::Error error(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string presetList() { return llvm::join(clusterPresetNames(), ", "); }

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

/// One DGX-style node of eight GPUs.
ClusterSpec gpuNode(StringRef name) {
  ClusterSpec c;
  c.name = name.str();
  c.nodes = 1;
  c.devicesPerNode = 8;
  return c;
}

ClusterSpec a100(StringRef name, double memoryGiB, double hbmGBs,
                 double hostGB) {
  ClusterSpec c = gpuNode(name);
  c.deviceMemory = memoryGiB * GiB;
  // A100 data sheet (SXM4): 312 TFLOP/s bf16/fp16 tensor dense (624 with
  // 2:4 sparsity); 19.5 TFLOP/s plain fp32 (156 with TF32 tensor cores).
  c.peakFlops16 = 312 * TFLOPS;
  c.gemmWaveTiles = 108; // SMs
  c.peakFlops32 = 19.5 * TFLOPS;
  c.memoryBandwidth = hbmGBs * GB;
  // NVLink 3 through NVSwitch: 600 GB/s per GPU both directions together.
  c.intraBandwidth = 300 * GB;
  c.intraLatency = 2 * US; // NCCL small-message step over NVLink, ~2 us
  // DGX A100: 8 InfiniBand HDR ports of 200 Gb/s (25 GB/s), one per GPU.
  c.interBandwidth = 25 * GB;
  c.interLatency = 5 * US; // IB verbs + NCCL proxy, ~5 us
  c.hostMemory = hostGB * GB;
  // PCIe Gen4 x16: 32 GB/s spec, ~25 GB/s measured per direction.
  c.pcieBandwidth = 25 * GB;
  return c;
}

ClusterSpec hopper(StringRef name, double memoryGiB, double hbmGBs) {
  ClusterSpec c = gpuNode(name);
  c.deviceMemory = memoryGiB * GiB;
  // H100/H200 SXM data sheets: 989 TFLOP/s bf16/fp16 tensor dense (the
  // headline 1979 is with sparsity); 67 TFLOP/s plain fp32.
  c.peakFlops16 = 989 * TFLOPS;
  c.gemmWaveTiles = 132; // SMs of the SXM parts
  // Fitted on llm-foundry's H100 rows as ClusterSpec::attentionEfficiency's
  // default on the A100's; the H200 has the H100's SMs and clocks.
  c.attentionEfficiency = 0.15;
  c.peakFlops32 = 67 * TFLOPS;
  c.memoryBandwidth = hbmGBs * GB;
  // NVLink 4 through NVSwitch: 900 GB/s per GPU both directions together.
  c.intraBandwidth = 450 * GB;
  c.intraLatency = 2 * US;
  // DGX H100/H200: 8 ConnectX-7 InfiniBand NDR ports of 400 Gb/s, one per GPU.
  c.interBandwidth = 50 * GB;
  c.interLatency = 5 * US;
  c.hostMemory = 2048 * GB; // DGX H100/H200: 2 TB
  // PCIe Gen5 x16: 64 GB/s spec, ~50 GB/s measured per direction.
  c.pcieBandwidth = 50 * GB;
  return c;
}

ClusterSpec v100_32g() {
  ClusterSpec c = gpuNode("v100-32g");
  c.deviceMemory = 32 * GiB;
  // V100 SXM2 data sheet: 125 TFLOP/s fp16 tensor (fp32 accumulate; no
  // bf16 on Volta), 15.7 TFLOP/s fp32, 900 GB/s HBM2.
  c.peakFlops16 = 125 * TFLOPS;
  c.gemmWaveTiles = 80; // SMs
  c.peakFlops32 = 15.7 * TFLOPS;
  c.memoryBandwidth = 900 * GB;
  // NVLink 2: 300 GB/s per GPU both directions together. DGX-1V wires the
  // eight GPUs as a hybrid cube mesh (not all-to-all; rings still get about
  // this), DGX-2 through NVSwitch.
  c.intraBandwidth = 150 * GB;
  c.intraLatency = 3 * US;
  // One InfiniBand EDR port of 100 Gb/s (12.5 GB/s) per GPU. A DGX-1V has only
  // four for eight GPUs (6.25 GB/s per GPU): override inter_node_gbs for one.
  c.interBandwidth = 12.5 * GB;
  c.interLatency = 5 * US;
  c.hostMemory = 512 * GB;   // DGX-1V: 512 GB
  c.pcieBandwidth = 12 * GB; // PCIe Gen3 x16: 16 GB/s spec, ~12 measured
  return c;
}

ClusterSpec rtx3090() {
  ClusterSpec c = gpuNode("rtx3090");
  c.deviceMemory = 24 * GiB;
  // GA102 whitepaper (GeForce RTX 3090): 71 TFLOP/s fp16/bf16 tensor with
  // fp32 accumulate, which is what mixed-precision training uses (142 with
  // fp16 accumulate); 35.6 TFLOP/s fp32; 936 GB/s GDDR6X.
  c.peakFlops16 = 71 * TFLOPS;
  c.gemmWaveTiles = 82; // SMs
  c.peakFlops32 = 35.6 * TFLOPS;
  c.memoryBandwidth = 936 * GB;
  // No NVSwitch (NVLink bridges pair two cards at most): eight cards talk over
  // PCIe Gen4 x16, ~25 GB/s per direction at best, a few us per transfer.
  c.intraBandwidth = 25 * GB;
  c.intraLatency = 5 * US;
  // A workstation-class server: one 25 Gb/s Ethernet NIC (3.125 GB/s) shared
  // by the eight GPUs, TCP latency.
  c.interBandwidth = 25.0 / 8 / 8 * GB;
  c.interLatency = 30 * US;
  c.hostMemory = 256 * GB;   // assumed: a typical 8-GPU workstation server
  c.pcieBandwidth = 25 * GB; // PCIe Gen4 x16
  return c;
}

ClusterSpec rtx2060() {
  ClusterSpec c = gpuNode("rtx2060");
  c.deviceMemory = 6 * GiB;
  // TU106 (GeForce RTX 2060) from the Turing whitepaper: 51.6 TFLOP/s fp16
  // tensor with fp16 accumulate, half of it (25.8) with the fp32 accumulate
  // that mixed-precision training uses: the 25.8 is taken. No bf16 on Turing.
  // 6.45 TFLOP/s fp32; 336 GB/s GDDR6.
  c.peakFlops16 = 25.8 * TFLOPS;
  c.gemmWaveTiles = 30; // SMs
  c.peakFlops32 = 6.45 * TFLOPS;
  c.memoryBandwidth = 336 * GB;
  // No NVLink on the 2060: peers over PCIe Gen3 x16, ~12 GB/s per direction.
  c.intraBandwidth = 12 * GB;
  c.intraLatency = 5 * US;
  // One 10 Gb/s Ethernet NIC (1.25 GB/s) shared by the eight GPUs, TCP.
  c.interBandwidth = 10.0 / 8 / 8 * GB;
  c.interLatency = 30 * US;
  c.hostMemory = 128 * GB;   // assumed: a consumer-class 8-GPU box
  c.pcieBandwidth = 12 * GB; // PCIe Gen3 x16
  return c;
}

const char *const presetNames[] = {"a100-40g", "a100-80g", "h100-sxm",
                                   "h200",     "v100-32g", "rtx3090",
                                   "rtx2060",  "local-cpu"};

std::optional<ClusterSpec> gpuShape(StringRef name) {
  // A100 SXM4 40 GB: 1555 GB/s HBM2, in DGX A100 320 GB with 1 TB of host
  // memory. A100 SXM4 80 GB: 2039 GB/s HBM2e, in DGX A100 640 GB with 2 TB.
  if (name == "a100-40g")
    return a100(name, 40, 1555, 1024);
  if (name == "a100-80g")
    return a100(name, 80, 2039, 2048);
  // H100 SXM5: 80 GB HBM3 at 3.35 TB/s (nvidia-smi: 81559 MiB). H200 SXM:
  // 141 GB HBM3e at 4.8 TB/s (143771 MiB).
  if (name == "h100-sxm")
    return hopper(name, 79.6, 3350);
  if (name == "h200")
    return hopper(name, 140.4, 4800);
  if (name == "v100-32g")
    return v100_32g();
  if (name == "rtx3090")
    return rtx3090();
  if (name == "rtx2060")
    return rtx2060();
  return std::nullopt;
}

} // namespace

std::optional<std::string> colo::planner::clusterPresetForGpu(StringRef gpu) {
  if (gpu.contains("H200"))
    return "h200";
  if (gpu.contains("H100"))
    return "h100-sxm";
  if (gpu.contains("A100"))
    return gpu.contains("80GB") ? "a100-80g" : "a100-40g";
  if (gpu.contains("V100"))
    return "v100-32g";
  if (gpu.contains("3090"))
    return "rtx3090";
  if (gpu.contains("2060"))
    return "rtx2060";
  return std::nullopt;
}

namespace {

/// A GPU preset: its shape, and attention and the loss fused as GPU stacks
/// run them.
std::optional<ClusterSpec> gpuPreset(StringRef name) {
  std::optional<ClusterSpec> spec = gpuShape(name);
  if (spec) {
    spec->fusedAttention = spec->fusedLoss = 1;
    spec->overlapSlowdown = 0.189; // ClusterSpec::overlapSlowdown
  }
  return spec;
}

bool isPreset(StringRef name) { return llvm::is_contained(presetNames, name); }

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

enum class FieldKind { Positive, NonNegative, Efficiency, Flag };

struct Field {
  const char *key;
  double ClusterSpec::*member;
  double scale; // file unit -> SI
  FieldKind kind;
  bool required; // when there is no preset
};

struct Section {
  const char *key;
  llvm::ArrayRef<Field> fields;
};

const Field deviceFields[] = {
    {"memory_gb", &ClusterSpec::deviceMemory, GB, FieldKind::Positive, true},
    {"peak_tflops_16", &ClusterSpec::peakFlops16, TFLOPS, FieldKind::Positive, true},
    {"peak_tflops_32", &ClusterSpec::peakFlops32, TFLOPS, FieldKind::Positive, true},
    {"memory_bandwidth_gbs", &ClusterSpec::memoryBandwidth, GB, FieldKind::Positive, true},
    {"matmul_efficiency", &ClusterSpec::matmulEfficiency, 1, FieldKind::Efficiency, false},
    {"memory_efficiency", &ClusterSpec::memoryEfficiency, 1, FieldKind::Efficiency, false},
    {"attention_efficiency", &ClusterSpec::attentionEfficiency, 1, FieldKind::Efficiency, false},
    {"overlap_slowdown", &ClusterSpec::overlapSlowdown, 1, FieldKind::NonNegative, false},
    {"gemm_wave_tiles", &ClusterSpec::gemmWaveTiles, 1, FieldKind::NonNegative, false},
    {"workspace_gb", &ClusterSpec::workspace, GB, FieldKind::NonNegative, false},
    {"collective_staging", &ClusterSpec::collectiveStaging, 1, FieldKind::Flag, false},
    {"gemm_scratch", &ClusterSpec::gemmScratch, 1, FieldKind::Flag, false},
    {"fused_attention", &ClusterSpec::fusedAttention, 1, FieldKind::Flag, false},
    {"fused_loss", &ClusterSpec::fusedLoss, 1, FieldKind::Flag, false},
    {"fused_elementwise", &ClusterSpec::fusedElementwise, 1, FieldKind::Flag, false},
    {"timed_here", &ClusterSpec::timedHere, 1, FieldKind::Flag, false},
};
const Field linkFields[] = {
    {"intra_node_gbs", &ClusterSpec::intraBandwidth, GB, FieldKind::Positive,
     true},
    {"intra_node_latency_us", &ClusterSpec::intraLatency, US,
     FieldKind::Positive, true},
    {"inter_node_gbs", &ClusterSpec::interBandwidth, GB, FieldKind::Positive,
     true},
    {"inter_node_latency_us", &ClusterSpec::interLatency, US,
     FieldKind::Positive, true},
    {"pcie_gbs", &ClusterSpec::pcieBandwidth, GB, FieldKind::Positive, true},
};
const Field hostFields[] = {
    {"memory_gb", &ClusterSpec::hostMemory, GB, FieldKind::Positive, true},
};
const Section sections[] = {
    {"device", deviceFields}, {"links", linkFields}, {"host", hostFields}};

const char *const topLevelKeys[] = {
    "name", "preset", "nodes", "devices_per_node", "device", "links", "host"};

const char *kindName(const llvm::json::Value &v) {
  switch (v.kind()) {
  case llvm::json::Value::Null:
    return "null";
  case llvm::json::Value::Boolean:
    return "a boolean";
  case llvm::json::Value::Number:
    return "a number";
  case llvm::json::Value::String:
    return "a string";
  case llvm::json::Value::Array:
    return "an array";
  case llvm::json::Value::Object:
    return "an object";
  }
  return "a value";
}

std::string printed(const llvm::json::Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v;
  return s;
}

/// A wrong value for a message: scalars as written, containers by kind.
std::string describe(const llvm::json::Value &v) {
  if (v.kind() == llvm::json::Value::Array ||
      v.kind() == llvm::json::Value::Object)
    return kindName(v);
  return printed(v);
}

/// Every key of `object` must be in `valid`; `where` prefixes the key in the
/// message ("device." for a section). Reports the first unknown key in sorted
/// order so that the message does not depend on hashing.
llvm::Error checkKeys(const llvm::json::Object &object,
                      llvm::ArrayRef<const char *> valid, StringRef what,
                      StringRef where) {
  llvm::SmallVector<StringRef> unknown;
  for (const auto &kv : object)
    if (!llvm::is_contained(valid, StringRef(kv.first)))
      unknown.push_back(kv.first);
  if (unknown.empty())
    return llvm::Error::success();
  llvm::sort(unknown);
  std::string in =
      where.empty() ? "" : ("in '" + where.drop_back() + "' ").str();
  return error(what + ": unknown key '" + where + unknown.front() +
               "'; valid keys " + in + "are: " + llvm::join(valid, ", "));
}

llvm::Expected<int64_t> positiveInteger(const llvm::json::Value &v,
                                        StringRef what, StringRef field) {
  std::optional<int64_t> i = v.getAsInteger();
  if (!i || *i <= 0)
    return error(what + ": " + field + ": must be a positive integer, got " +
                 describe(v));
  return *i;
}

llvm::Error parseField(const llvm::json::Value &v, const Field &field,
                       StringRef what, StringRef path, ClusterSpec &spec) {
  std::optional<double> d = v.getAsNumber();
  if (!d)
    return error(what + ": " + path + ": must be a number, got " + describe(v));
  if (field.kind == FieldKind::Flag) {
    if (*d != 0 && *d != 1)
      return error(what + ": " + path + ": must be 0 or 1, got " + printed(v));
  } else if (field.kind == FieldKind::Efficiency) {
    if (!(*d > 0 && *d <= 1))
      return error(what + ": " + path + ": must be in (0, 1], got " +
                   printed(v));
  } else if (field.kind == FieldKind::NonNegative) {
    if (!(*d >= 0) || !std::isfinite(*d))
      return error(what + ": " + path + ": must be a non-negative number, got " +
                   printed(v));
  } else if (!(*d > 0) || !std::isfinite(*d)) {
    return error(what + ": " + path + ": must be a positive number, got " +
                 printed(v));
  }
  spec.*field.member = *d * field.scale;
  return llvm::Error::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

std::vector<std::string> colo::planner::clusterPresetNames() {
  return std::vector<std::string>(std::begin(presetNames),
                                  std::end(presetNames));
}

namespace {
/// This machine, measured once per process: a few seconds, and the numbers
/// should not change under a planner that asks twice.
const std::pair<ClusterSpec, double> &localCpuMeasurement() {
  static const std::pair<ClusterSpec, double> measured = [] {
    double allCore = 0;
    ClusterSpec c = measureLocalCpu(&allCore);
    return std::make_pair(c, allCore);
  }();
  return measured;
}
} // namespace

Expected<ClusterSpec> colo::planner::clusterPreset(StringRef name) {
  if (std::optional<ClusterSpec> spec = gpuPreset(name))
    return *spec;
  if (name == "local-cpu")
    return localCpuMeasurement().first;
  return error("unknown cluster preset '" + name +
               "' (presets: " + presetList() + ")");
}

Expected<ClusterSpec> colo::planner::clusterPreset(StringRef name,
                                                   int64_t nodes,
                                                   int64_t devicesPerNode) {
  if (name == "local-cpu") {
    const auto &[measured, allCore] = localCpuMeasurement();
    return shapeLocalCpu(measured, allCore, nodes, devicesPerNode);
  }
  Expected<ClusterSpec> c = clusterPreset(name);
  if (c) {
    c->nodes = nodes;
    c->devicesPerNode = devicesPerNode;
  }
  return c;
}

ClusterSpec colo::planner::shapeLocalCpu(const ClusterSpec &measured,
                                         double allCoreGemmFlops, int64_t nodes,
                                         int64_t devicesPerNode) {
  ClusterSpec c = measured;
  c.nodes = nodes;
  c.devicesPerNode = devicesPerNode;
  double cores = double(std::max<int64_t>(1, measured.devicesPerNode));
  double ranks = double(std::max<int64_t>(1, devicesPerNode));
  RankCores rank = localCpuRankCores(devicesPerNode, measured.devicesPerNode);
  double threads = rank.threads, timeShare = rank.timeShare;
  double oneCore = measured.peakFlops32;
  double allCores = allCoreGemmFlops > 0 ? allCoreGemmFlops : oneCore * cores;
  double gemm = cores > 1 ? oneCore + (threads - 1) / (cores - 1) *
                                          (allCores - oneCore)
                          : oneCore;
  c.peakFlops32 = gemm * timeShare;
  // 16-bit products scale with the threads as the float ones do.
  c.peakFlops16 = c.peakFlops32 * measured.peakFlops16 / oneCore;
  // Generated kernels (everything but GEMMs) run in pieces on the rank's
  // threads (runtime.md, "Kernel pieces"): each thread streams at one
  // core's share of the bandwidth.
  c.memoryBandwidth = measured.memoryBandwidth * threads * timeShare;
  c.pcieBandwidth = c.memoryBandwidth;
  c.intraBandwidth = measured.intraBandwidth * timeShare;
  c.interBandwidth = measured.interBandwidth * timeShare;
  c.deviceMemory = measured.hostMemory / ranks;
  return c;
}

llvm::Error colo::planner::checkJsonNesting(StringRef json, StringRef what) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > 64)
        return error(what + ": invalid JSON: nested more than 64 levels deep");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return llvm::Error::success();
}

Expected<ClusterSpec> colo::planner::parseCluster(StringRef json,
                                                  StringRef what) {
  if (llvm::Error e = checkJsonNesting(json, what))
    return std::move(e);
  Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed)
    return error(what + ": invalid JSON: " + toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return error(what + ": expected a JSON object at the top level, got " +
                 kindName(*parsed));
  if (llvm::Error e = checkKeys(*root, topLevelKeys, what, ""))
    return std::move(e);

  ClusterSpec spec;
  bool hasPreset = false;
  std::string presetName;
  if (const llvm::json::Value *preset = root->get("preset")) {
    std::optional<StringRef> name = preset->getAsString();
    if (!name)
      return error(what + ": preset: must be a string, got " +
                   describe(*preset));
    if (!isPreset(*name))
      return error(what + ": preset: unknown preset '" + *name +
                   "' (presets: " + presetList() + ")");
    Expected<ClusterSpec> base = clusterPreset(*name);
    if (!base)
      return error(what + ": preset: " + toString(base.takeError()));
    spec = *base;
    hasPreset = true;
    presetName = name->str();
  }
  if (const llvm::json::Value *name = root->get("name")) {
    std::optional<StringRef> s = name->getAsString();
    if (!s || s->empty())
      return error(what + ": name: must be a non-empty string, got " +
                   describe(*name));
    spec.name = s->str();
  } else if (!hasPreset) {
    spec.name = llvm::sys::path::stem(what).str();
  }
  if (const llvm::json::Value *v = root->get("nodes")) {
    Expected<int64_t> n = positiveInteger(*v, what, "nodes");
    if (!n)
      return n.takeError();
    spec.nodes = *n;
  }
  if (const llvm::json::Value *v = root->get("devices_per_node")) {
    Expected<int64_t> n = positiveInteger(*v, what, "devices_per_node");
    if (!n)
      return n.takeError();
    spec.devicesPerNode = *n;
  }
  int64_t world;
  if (llvm::MulOverflow(spec.nodes, spec.devicesPerNode, world))
    return error(what + ": nodes x devices_per_node overflows (" +
                 llvm::Twine(spec.nodes) + " x " +
                 llvm::Twine(spec.devicesPerNode) + ")");
  if (presetName == "local-cpu" &&
      (root->get("nodes") || root->get("devices_per_node"))) {
    // The measured figures shared out among this many ranks per node.
    std::string name = spec.name;
    spec = cantFail(clusterPreset(presetName, spec.nodes, spec.devicesPerNode));
    spec.name = name;
  }

  for (const Section &section : sections) {
    const llvm::json::Value *value = root->get(section.key);
    const llvm::json::Object *object = value ? value->getAsObject() : nullptr;
    if (value && !object)
      return error(what + ": " + section.key + ": must be an object, got " +
                   kindName(*value));
    llvm::SmallVector<const char *> keys;
    for (const Field &field : section.fields)
      keys.push_back(field.key);
    if (object)
      if (llvm::Error e = checkKeys(*object, keys, what,
                                    (section.key + llvm::Twine(".")).str()))
        return std::move(e);
    for (const Field &field : section.fields) {
      std::string path = (section.key + llvm::Twine(".") + field.key).str();
      const llvm::json::Value *v = object ? object->get(field.key) : nullptr;
      if (!v) {
        if (field.required && !hasPreset)
          return error(what + ": missing required field '" + path +
                       "' (every device, links and host field is required "
                       "when no 'preset' is given)");
        continue;
      }
      if (llvm::Error e = parseField(*v, field, what, path, spec))
        return std::move(e);
    }
  }
  return spec;
}

Expected<ClusterSpec> colo::planner::loadClusterFile(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return error("cannot read cluster file '" + path +
                 "': " + buffer.getError().message());
  return parseCluster((*buffer)->getBuffer(), path);
}

Expected<ClusterSpec> colo::planner::resolveCluster(StringRef spec) {
  const char *usage = "expected NAME, NAME:NODESxDEVICES (e.g. "
                      "a100-80g:128x8) or a JSON file";
  if (spec.empty())
    return error(llvm::Twine("empty cluster spec: ") + usage +
                 " (presets: " + presetList() + ")");
  bool isPath = spec.contains('/') || spec.ends_with(".json");
  if (!isPath) {
    auto [name, shape] = spec.split(':');
    if (isPreset(name)) {
      if (!spec.contains(':'))
        return clusterPreset(name);
      auto [nodesText, devicesText] = shape.split('x');
      int64_t nodes = 0, devices = 0, world = 0;
      // getAsInteger returns true on failure.
      if (!shape.contains('x') || nodesText.getAsInteger(10, nodes) ||
          devicesText.getAsInteger(10, devices) || nodes <= 0 || devices <= 0 ||
          llvm::MulOverflow(nodes, devices, world))
        return error("cluster '" + spec + "': '" + shape +
                     "' is not NODESxDEVICES with positive integers; " + usage);
      return clusterPreset(name, nodes, devices);
    }
    if (!llvm::sys::fs::exists(spec))
      return error("unknown cluster '" + spec + "': not a preset (presets: " +
                   presetList() + ") nor a file; " + usage);
  }
  return loadClusterFile(spec);
}

llvm::json::Value colo::planner::toJSON(const ClusterSpec &spec) {
  llvm::json::Object root{{"name", spec.name},
                          {"nodes", spec.nodes},
                          {"devices_per_node", spec.devicesPerNode}};
  for (const Section &section : sections) {
    llvm::json::Object object;
    for (const Field &field : section.fields)
      object[field.key] = spec.*field.member / field.scale;
    root[section.key] = std::move(object);
  }
  return root;
}

namespace {
/// Short and exact enough for a table: 2039, 19.5, 0.3906, 1.25e-05.
std::string num(double v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (v >= 1000 && v < 1e7)
    os << llvm::format("%.0f", v);
  else
    os << llvm::format("%.4g", v);
  return s;
}
} // namespace

void colo::planner::printCluster(const ClusterSpec &spec,
                                 llvm::raw_ostream &os) {
  os << "cluster " << spec.name << ": " << spec.nodes
     << (spec.nodes == 1 ? " node" : " nodes") << " x " << spec.devicesPerNode
     << " devices = " << spec.worldSize() << " devices\n";
  auto row = [&](StringRef label, const std::string &value) {
    os << "  " << llvm::left_justify(label, 26) << value << "\n";
  };
  auto eff = [](double e) {
    return " (achievable x" + llvm::formatv("{0:F2}", e).str() + ")";
  };
  row("device memory",
      num(spec.deviceMemory / GB) + " GB (" + num(spec.deviceMemory / GiB) + " GiB)");
  row("peak bf16/fp16",
      num(spec.peakFlops16 / TFLOPS) + " TFLOP/s" + eff(spec.matmulEfficiency));
  row("peak fp32",
      num(spec.peakFlops32 / TFLOPS) + " TFLOP/s" + eff(spec.matmulEfficiency));
  if (spec.gemmWaveTiles > 0)
    row("matrix products", "in waves of " + num(spec.gemmWaveTiles) + " tiles of 256 x 128");
  row("memory bandwidth",
      num(spec.memoryBandwidth / GB) + " GB/s" + eff(spec.memoryEfficiency));
  row("intra-node link", num(spec.intraBandwidth / GB) +
                             " GB/s per direction, " +
                             num(spec.intraLatency / US) + " us");
  row("inter-node link", num(spec.interBandwidth / GB) +
                             " GB/s per direction, " +
                             num(spec.interLatency / US) + " us");
  if (spec.overlapSlowdown > 0)
    row("overlapped collectives", "slow compute by " +
                                          num(100 * spec.overlapSlowdown) + "%");
  row("host<->device (PCIe)", num(spec.pcieBandwidth / GB) + " GB/s");
  row("host memory per node", num(spec.hostMemory / GB) + " GB");
  row("workspace per device", num(spec.workspace / GB) + " GB");
  if (spec.collectiveStaging > 0)
    row("collective staging", "received chunks in device memory");
  if (spec.gemmScratch > 0)
    row("matrix products", "copy transposed operands to scratch");
  row("attention", spec.fusedAttention > 0
                       ? "fused (no s x s probabilities kept for the backward)" +
                             eff(spec.attentionEfficiency)
                       : "as its ops (the probabilities kept for the backward)");
  row("elementwise ops", spec.fusedElementwise > 0 ? "fused kernels" : "a kernel each");
  if (spec.timedHere > 0)
    row("convolutions", "timed on this machine");
  row("loss", spec.fusedLoss > 0
                  ? "fused (the logits' gradient in the training precision)"
                  : "float32 log-probabilities and their gradient kept");
}

//===----------------------------------------------------------------------===//
// Measuring this machine
//===----------------------------------------------------------------------===//

namespace {
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Spins on `done`, yielding now and then so that an oversubscribed machine
/// (or one core) still makes progress.
template <typename Pred> void spinUntil(Pred done) {
  for (unsigned i = 1; !done(); ++i)
    if (i % 64 == 0)
      std::this_thread::yield();
}

/// `value` when it is a usable positive figure, else `fallback`: a failed or
/// absurd measurement must not turn into zeros or NaNs in the planner.
double sane(double value, double fallback) {
  return value > 0 && std::isfinite(value) ? value : fallback;
}

/// Best rate of the 1024^3 matrix product colo run computes (runtime/
/// CpuGemm.cpp: oneDNN's matmul, whose kernels follow the processor's
/// instructions) on `threads` threads, FLOP/s; `dtype` F32 or BF16. 0 if it
/// cannot run.
double measureGemm(int threads, colo::runtime::DType dtype) {
  namespace rt = colo::runtime;
  const int64_t n = 1024;
  size_t bytes = size_t(n) * n * size_t(rt::dtypeSize(dtype));
  std::vector<char> a(bytes), b(bytes), c(bytes);
  for (size_t i = 0; i < bytes; i += 2) // small values in f32 and bf16 alike
    a[i + 1] = char(0x3f), b[i + 1] = char(0x3e);
  rt::Gemm gemm;
  gemm.set_m(n), gemm.set_n(n), gemm.set_k(n);
  double best = 0;
  try {
    rt::ScopedThreads scoped(threads);
    rt::PreparedGemm product = rt::prepareGemm(gemm, dtype, a.data(), b.data(), c.data(),
                                               {}, std::make_shared<rt::Scratch>(),
                                               rt::GemmLibrary::OneDnn);
    best = bestSeconds([&] { product.run(); }, 1.0);
  } catch (const rt::Error &) {
    best = 0;
  }
  return best > 0 ? 2.0 * n * n * n / best : 0;
}

double physicalMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? double(pages) * double(size) : 0;
}

/// STREAM-like triad a = b + s*c on every core at once, each on its own
/// arrays (first-touched by the thread that uses them); the aggregate rate in
/// B/s, counting 24 bytes per element as STREAM does.
double measureTriad(unsigned threads) {
  // 3 x 128 MiB in all at least, and 3 x 8 MiB per thread so that no core's
  // share of the last-level cache holds its arrays; within a quarter of the
  // host's memory.
  size_t n = std::max<size_t>((size_t(16) << 20) / threads, size_t(1) << 20);
  if (double memory = physicalMemory(); memory > 0)
    n = std::min(n,
                 std::max<size_t>(size_t(memory / 4 / 24 / threads), 1 << 16));
  const int reps = 4;
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false}, failed{false};
  auto work = [&] {
    std::unique_ptr<double[]> a(new (std::nothrow) double[n]);
    std::unique_ptr<double[]> b(new (std::nothrow) double[n]);
    std::unique_ptr<double[]> c(new (std::nothrow) double[n]);
    if (!a || !b || !c)
      failed = true;
    else
      for (size_t i = 0; i < n; ++i) {
        a[i] = 0;
        b[i] = 1;
        c[i] = 2;
      }
    ++ready;
    spinUntil([&] { return go.load(); });
    if (failed)
      return;
    for (int rep = 0; rep < reps; ++rep) {
      double s = 0.5 + rep;
      for (size_t i = 0; i < n; ++i)
        a[i] = b[i] + s * c[i];
      // Keep the compiler from dropping a repetition as a dead store.
      asm volatile("" : : "r"(a.get()) : "memory");
    }
    volatile double sink = a[n / 2];
    (void)sink;
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back(work);
  spinUntil([&] { return ready.load() == threads; });
  Clock::time_point start = Clock::now();
  go = true;
  for (std::thread &t : pool)
    t.join();
  double seconds = secondsSince(start);
  if (failed || seconds <= 0)
    return 0;
  return 24.0 * n * threads * reps / seconds;
}

/// One thread hands a buffer to another through a small shared ring, copying
/// in and out, as NCCL's shared-memory transport does; the rate in B/s.
double measureThreadCopy() {
  const size_t chunk = size_t(512) << 10, slots = 8, chunks = 128; // 64 MiB
  std::unique_ptr<char[]> src(new (std::nothrow) char[chunk * chunks]);
  std::unique_ptr<char[]> dst(new (std::nothrow) char[chunk * chunks]);
  std::unique_ptr<char[]> ring(new (std::nothrow) char[chunk * slots]);
  if (!src || !dst || !ring)
    return 0;
  std::memset(src.get(), 1, chunk * chunks);
  std::memset(dst.get(), 0, chunk * chunks);
  std::memset(ring.get(), 0, chunk * slots);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::atomic<size_t> produced{0}, consumed{0};
    Clock::time_point start = Clock::now();
    std::thread producer([&] {
      for (size_t i = 0; i < chunks; ++i) {
        spinUntil([&] { return i - consumed.load() < slots; });
        std::memcpy(ring.get() + (i % slots) * chunk, src.get() + i * chunk,
                    chunk);
        produced.store(i + 1, std::memory_order_release);
      }
    });
    for (size_t i = 0; i < chunks; ++i) {
      spinUntil([&] { return produced.load(std::memory_order_acquire) > i; });
      std::memcpy(dst.get() + i * chunk, ring.get() + (i % slots) * chunk,
                  chunk);
      consumed.store(i + 1, std::memory_order_release);
    }
    producer.join();
    double seconds = secondsSince(start);
    if (rep > 0 && seconds > 0 && (best == 0 || seconds < best))
      best = seconds; // rep 0 warms the pages up
  }
  return best > 0 ? double(chunk * chunks) / best : 0;
}

/// One-way latency of a flag between two threads (half a round trip), s.
double measureThreadLatency() {
  std::atomic<int64_t> flag{0};
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    for (int64_t expect = 1;; expect += 2) {
      spinUntil([&] { return flag.load() == expect || stop.load(); });
      if (stop)
        return;
      flag.store(expect + 1);
    }
  });
  int64_t trips = 0;
  Clock::time_point start = Clock::now();
  for (; trips < 20000; ++trips) {
    flag.store(2 * trips + 1);
    spinUntil([&] { return flag.load() == 2 * trips + 2; });
    if (trips % 16 == 15 && secondsSince(start) > 0.3)
      break;
  }
  double seconds = secondsSince(start);
  stop = true;
  echo.join();
  return trips > 0 ? seconds / (2.0 * trips) : 0;
}

} // namespace

ClusterSpec colo::planner::measureLocalCpu(double *allCoreGemmFlops) {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  ClusterSpec c;
  c.name = "local-cpu";
  c.nodes = 1;
  c.devicesPerNode = cores; // one rank per logical CPU
  // Conservative stand-ins where a measurement fails: a slow core, DDR4.
  c.peakFlops32 = sane(measureGemm(1, colo::runtime::F32), 10e9);
  if (allCoreGemmFlops)
    // Without a measurement, threads are assumed to scale perfectly.
    *allCoreGemmFlops = cores > 1 ? sane(measureGemm(int(cores), colo::runtime::F32),
                                         c.peakFlops32 * cores)
                                  : c.peakFlops32;
  // bf16 products as colo run computes them: on AMX, or widened to f32.
  c.peakFlops16 = sane(measureGemm(1, colo::runtime::BF16), c.peakFlops32);
  // Every core streams at once in training: each device gets its share.
  c.memoryBandwidth = sane(measureTriad(cores) / cores, 1 * GB);
  c.intraBandwidth = sane(measureThreadCopy(), 1 * GB);
  c.intraLatency = sane(measureThreadLatency(), 1 * US);
  // One node: nothing crosses nodes; the intra-node link stands in.
  c.interBandwidth = c.intraBandwidth;
  c.interLatency = c.intraLatency;
  c.hostMemory = sane(physicalMemory(), 1 * GB);
  // A core's "device memory" is its share of the host's, and moving data
  // "to the device" is a memory copy.
  c.deviceMemory = c.hostMemory / cores;
  c.pcieBandwidth = c.memoryBandwidth;
  // The figures are measured achievable rates already.
  c.matmulEfficiency = 1;
  c.memoryEfficiency = 1;
  // colo run allocates the program's buffers, no device context or library
  // workspace; its MPI collectives stage received chunks in host memory.
  c.workspace = 0;
  c.collectiveStaging = 1;
  c.gemmScratch = 1;
  c.fusedElementwise = 1;
  c.timedHere = 1;
  return c;
}
