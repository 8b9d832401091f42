// Unit tests of the planner's cluster description (lib/Planner/Cluster):
// preset figures against the vendor data sheets (REFERENCES.md's hardware
// list), NAME:NODESxDEVICES specs, JSON files and every validation error.
#include "colo/Planner/Cluster.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace colo::planner;

namespace {

constexpr double GB = 1e9, GiB = 1 << 30, TFLOPS = 1e12, US = 1e-6;

ClusterSpec preset(llvm::StringRef name) {
  llvm::Expected<ClusterSpec> spec = clusterPreset(name);
  if (!spec) {
    ADD_FAILURE() << llvm::toString(spec.takeError());
    return {};
  }
  return *spec;
}

/// The error message of a spec that must fail, or "" (and a test failure).
std::string errorOf(llvm::Expected<ClusterSpec> spec) {
  if (spec) {
    ADD_FAILURE() << "expected an error, got cluster '" << spec->name << "'";
    return "";
  }
  return llvm::toString(spec.takeError());
}

std::string parseError(llvm::StringRef json) {
  return errorOf(parseCluster(json, "bad.json"));
}

/// A complete description without a preset.
const char *kFull = R"({
  "name": "my-a100", "nodes": 16, "devices_per_node": 8,
  "device": {"memory_gb": 80, "peak_tflops_16": 312, "peak_tflops_32": 19.5,
             "memory_bandwidth_gbs": 2039, "matmul_efficiency": 0.7,
             "memory_efficiency": 0.9},
  "links": {"intra_node_gbs": 300, "intra_node_latency_us": 2,
            "inter_node_gbs": 25, "inter_node_latency_us": 5, "pcie_gbs": 25},
  "host": {"memory_gb": 1024}})";

TEST(ClusterPresets, A100) {
  ClusterSpec a = preset("a100-80g");
  EXPECT_EQ(a.name, "a100-80g");
  EXPECT_DOUBLE_EQ(a.deviceMemory, 80 * GiB);
  EXPECT_DOUBLE_EQ(a.peakFlops16, 312 * TFLOPS);
  EXPECT_DOUBLE_EQ(a.peakFlops32, 19.5 * TFLOPS);
  EXPECT_DOUBLE_EQ(a.memoryBandwidth, 2039 * GB);
  EXPECT_DOUBLE_EQ(a.intraBandwidth, 300 * GB); // 600 GB/s both ways
  EXPECT_DOUBLE_EQ(a.interBandwidth, 25 * GB);  // HDR 200 Gb/s per GPU
  EXPECT_EQ(a.nodes, 1);
  EXPECT_EQ(a.devicesPerNode, 8);
  EXPECT_EQ(a.worldSize(), 8);

  ClusterSpec small = preset("a100-40g");
  EXPECT_DOUBLE_EQ(small.deviceMemory, 40 * GiB);
  EXPECT_DOUBLE_EQ(small.peakFlops16, 312 * TFLOPS);
  EXPECT_LT(small.memoryBandwidth, a.memoryBandwidth);
}

TEST(ClusterPresets, Hopper) {
  ClusterSpec h100 = preset("h100-sxm");
  EXPECT_DOUBLE_EQ(h100.deviceMemory, 79.6 * GiB);
  EXPECT_DOUBLE_EQ(h100.peakFlops16, 989 * TFLOPS);
  EXPECT_DOUBLE_EQ(h100.memoryBandwidth, 3350 * GB);
  EXPECT_DOUBLE_EQ(h100.intraBandwidth, 450 * GB); // 900 GB/s both ways
  EXPECT_DOUBLE_EQ(h100.interBandwidth, 50 * GB);  // NDR 400 Gb/s per GPU

  ClusterSpec h200 = preset("h200");
  EXPECT_DOUBLE_EQ(h200.deviceMemory, 140.4 * GiB);
  EXPECT_DOUBLE_EQ(h200.memoryBandwidth, 4800 * GB);
  EXPECT_DOUBLE_EQ(h200.peakFlops16, 989 * TFLOPS);
}

TEST(ClusterPresets, OlderAndConsumerCards) {
  ClusterSpec v100 = preset("v100-32g");
  EXPECT_DOUBLE_EQ(v100.peakFlops16, 125 * TFLOPS);
  EXPECT_DOUBLE_EQ(v100.intraBandwidth, 150 * GB);
  ClusterSpec rtx3090 = preset("rtx3090");
  EXPECT_DOUBLE_EQ(rtx3090.deviceMemory, 24 * GiB);
  EXPECT_DOUBLE_EQ(rtx3090.peakFlops16, 71 * TFLOPS); // fp32 accumulate
  EXPECT_DOUBLE_EQ(rtx3090.memoryBandwidth, 936 * GB);
  ClusterSpec rtx2060 = preset("rtx2060");
  EXPECT_DOUBLE_EQ(rtx2060.deviceMemory, 6 * GiB);
  EXPECT_DOUBLE_EQ(rtx2060.memoryBandwidth, 336 * GB);
  // Consumer cards have no NVSwitch: peers over PCIe, slower than NVLink.
  EXPECT_LT(rtx2060.intraBandwidth, v100.intraBandwidth);
}

TEST(ClusterPresets, TheGpuACudaDeviceNames) {
  // cudaDeviceProp::name of the GPUs, as nvidia-smi and PyTorch print them.
  EXPECT_EQ(clusterPresetForGpu("NVIDIA H200"), "h200");
  EXPECT_EQ(clusterPresetForGpu("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(clusterPresetForGpu("NVIDIA A100-SXM4-80GB"), "a100-80g");
  EXPECT_EQ(clusterPresetForGpu("NVIDIA A100-SXM4-40GB"), "a100-40g");
  EXPECT_EQ(clusterPresetForGpu("Tesla V100-SXM2-32GB"), "v100-32g");
  EXPECT_EQ(clusterPresetForGpu("NVIDIA GeForce RTX 3090"), "rtx3090");
  EXPECT_EQ(clusterPresetForGpu("NVIDIA L4"), std::nullopt);
  for (const char *gpu : {"NVIDIA H200", "NVIDIA A100-SXM4-40GB"})
    EXPECT_TRUE(bool(clusterPreset(*clusterPresetForGpu(gpu))));
}

TEST(ClusterPresets, EveryPresetIsComplete) {
  for (const std::string &name : clusterPresetNames()) {
    SCOPED_TRACE(name);
    ClusterSpec c = preset(name);
    EXPECT_EQ(c.name, name);
    EXPECT_GE(c.worldSize(), 1);
    for (double v :
         {c.deviceMemory, c.peakFlops16, c.peakFlops32, c.memoryBandwidth,
          c.intraBandwidth, c.intraLatency, c.interBandwidth, c.interLatency,
          c.hostMemory, c.pcieBandwidth}) {
      EXPECT_GT(v, 0);
      EXPECT_TRUE(std::isfinite(v));
    }
    EXPECT_GT(c.matmulEfficiency, 0);
    EXPECT_LE(c.matmulEfficiency, 1);
    EXPECT_GT(c.memoryEfficiency, 0);
    EXPECT_LE(c.memoryEfficiency, 1);
    // Every preset reads back from its JSON.
    std::string json = llvm::formatv("{0}", toJSON(c)).str();
    llvm::Expected<ClusterSpec> back = parseCluster(json, "roundtrip.json");
    ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
    EXPECT_EQ(back->name, c.name);
    EXPECT_EQ(back->worldSize(), c.worldSize());
    EXPECT_DOUBLE_EQ(back->deviceMemory, c.deviceMemory);
    EXPECT_DOUBLE_EQ(back->peakFlops16, c.peakFlops16);
    EXPECT_DOUBLE_EQ(back->interBandwidth, c.interBandwidth);
    EXPECT_DOUBLE_EQ(back->interLatency, c.interLatency);
    EXPECT_DOUBLE_EQ(back->matmulEfficiency, c.matmulEfficiency);
  }
}

TEST(ClusterPresets, UnknownPresetListsPresets) {
  std::string msg = errorOf(clusterPreset("a100"));
  EXPECT_NE(msg.find("'a100'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a100-80g"), std::string::npos) << msg;
  EXPECT_NE(msg.find("local-cpu"), std::string::npos) << msg;
}

TEST(ClusterLocalCpu, MeasuredFiguresArePositiveAndFinite) {
  ClusterSpec c = measureLocalCpu();
  EXPECT_EQ(c.name, "local-cpu");
  EXPECT_EQ(c.nodes, 1);
  EXPECT_GE(c.devicesPerNode, 1);
  for (double v :
       {c.deviceMemory, c.peakFlops16, c.peakFlops32, c.memoryBandwidth,
        c.intraBandwidth, c.intraLatency, c.interBandwidth, c.interLatency,
        c.hostMemory, c.pcieBandwidth}) {
    EXPECT_GT(v, 0);
    EXPECT_TRUE(std::isfinite(v));
  }
}

// local-cpu:1xN shares the measured cores among N ranks as colo run runs
// them: 2 cores, 1 rank: 2 BLAS threads; 2 ranks: 1 each; 4 ranks: half a
// core each. Generated kernels use one thread per rank.
TEST(ClusterLocalCpu, ShapeSharesTheCores) {
  ClusterSpec core;
  core.name = "local-cpu";
  core.devicesPerNode = 2;
  core.peakFlops32 = 50e9;
  core.peakFlops16 = 40e9; // bf16 at 0.8 of the float rate
  core.memoryBandwidth = 10e9;
  core.intraBandwidth = core.interBandwidth = 4e9;
  core.hostMemory = 16e9;
  core.deviceMemory = 8e9;
  double allCores = 90e9; // threads scale by 1.8
  ClusterSpec one = shapeLocalCpu(core, allCores, 1, 1);
  EXPECT_EQ(one.worldSize(), 1);
  EXPECT_DOUBLE_EQ(one.peakFlops32, 90e9);
  EXPECT_DOUBLE_EQ(one.peakFlops16, 72e9);
  EXPECT_DOUBLE_EQ(one.memoryBandwidth, 20e9); // kernels in pieces on both threads
  EXPECT_DOUBLE_EQ(one.deviceMemory, 16e9);
  ClusterSpec two = shapeLocalCpu(core, allCores, 1, 2);
  EXPECT_DOUBLE_EQ(two.peakFlops32, 50e9);
  EXPECT_DOUBLE_EQ(two.peakFlops16, 40e9);
  EXPECT_DOUBLE_EQ(two.memoryBandwidth, 10e9);
  EXPECT_DOUBLE_EQ(two.deviceMemory, 8e9);
  ClusterSpec four = shapeLocalCpu(core, allCores, 1, 4);
  EXPECT_DOUBLE_EQ(four.peakFlops32, 25e9);
  EXPECT_DOUBLE_EQ(four.memoryBandwidth, 5e9);
  EXPECT_DOUBLE_EQ(four.intraBandwidth, 2e9);
  EXPECT_DOUBLE_EQ(four.deviceMemory, 4e9);
  EXPECT_EQ(four.workspace, core.workspace);
}

TEST(ClusterLocalCpu, ShapedPresetAndFile) {
  ClusterSpec base = cantFail(resolveCluster("local-cpu"));
  ClusterSpec more = cantFail(resolveCluster(
      ("local-cpu:1x" + llvm::Twine(4 * base.devicesPerNode)).str()));
  EXPECT_NEAR(more.peakFlops32, base.peakFlops32 / 4, 1e-6 * base.peakFlops32);
  EXPECT_NEAR(more.deviceMemory, base.deviceMemory / 4, 1);
  EXPECT_EQ(base.workspace, 0);
  ClusterSpec file = cantFail(parseCluster(
      ("{\"preset\": \"local-cpu\", \"devices_per_node\": " +
       llvm::Twine(4 * base.devicesPerNode) + "}")
          .str(),
      "cpu.json"));
  EXPECT_DOUBLE_EQ(file.peakFlops32, more.peakFlops32);
}

TEST(ClusterResolve, NameAndShape) {
  llvm::Expected<ClusterSpec> c = resolveCluster("a100-80g:128x8");
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->name, "a100-80g");
  EXPECT_EQ(c->nodes, 128);
  EXPECT_EQ(c->devicesPerNode, 8);
  EXPECT_EQ(c->worldSize(), 1024);
  EXPECT_DOUBLE_EQ(c->peakFlops16, 312 * TFLOPS);

  llvm::Expected<ClusterSpec> plain = resolveCluster("h200");
  ASSERT_TRUE(bool(plain)) << llvm::toString(plain.takeError());
  EXPECT_EQ(plain->worldSize(), 8);

  llvm::Expected<ClusterSpec> one = resolveCluster("rtx3090:1x2");
  ASSERT_TRUE(bool(one)) << llvm::toString(one.takeError());
  EXPECT_EQ(one->worldSize(), 2);
}

TEST(ClusterResolve, BadShapes) {
  for (const char *spec :
       {"a100-80g:", "a100-80g:128", "a100-80g:0x8", "a100-80g:4x-1",
        "a100-80g:x8", "a100-80g:4x8x2", "a100-80g:fourx8",
        "a100-80g:9223372036854775807x2"}) {
    SCOPED_TRACE(spec);
    std::string msg = errorOf(resolveCluster(spec));
    EXPECT_NE(msg.find("NODESxDEVICES"), std::string::npos) << msg;
  }
}

TEST(ClusterResolve, UnknownNameAndMissingFile) {
  std::string msg = errorOf(resolveCluster("b200"));
  EXPECT_NE(msg.find("'b200'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("h100-sxm"), std::string::npos) << msg;
  msg = errorOf(resolveCluster(""));
  EXPECT_NE(msg.find("empty"), std::string::npos) << msg;
  msg = errorOf(resolveCluster("/nonexistent/cluster.json"));
  EXPECT_NE(msg.find("/nonexistent/cluster.json"), std::string::npos) << msg;
}

TEST(ClusterResolve, File) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("cluster", "json", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    os << kFull;
  }
  llvm::Expected<ClusterSpec> c = resolveCluster(path);
  llvm::sys::fs::remove(path);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->name, "my-a100");
  EXPECT_EQ(c->worldSize(), 128);
}

TEST(ClusterFile, FullWithoutPreset) {
  llvm::Expected<ClusterSpec> c = parseCluster(kFull, "full.json");
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->name, "my-a100");
  EXPECT_EQ(c->nodes, 16);
  EXPECT_EQ(c->devicesPerNode, 8);
  EXPECT_EQ(c->worldSize(), 128);
  EXPECT_DOUBLE_EQ(c->deviceMemory, 80 * GB);
  EXPECT_DOUBLE_EQ(c->peakFlops16, 312 * TFLOPS);
  EXPECT_DOUBLE_EQ(c->peakFlops32, 19.5 * TFLOPS);
  EXPECT_DOUBLE_EQ(c->memoryBandwidth, 2039 * GB);
  EXPECT_DOUBLE_EQ(c->matmulEfficiency, 0.7);
  EXPECT_DOUBLE_EQ(c->memoryEfficiency, 0.9);
  EXPECT_DOUBLE_EQ(c->intraBandwidth, 300 * GB);
  EXPECT_DOUBLE_EQ(c->intraLatency, 2 * US);
  EXPECT_DOUBLE_EQ(c->interBandwidth, 25 * GB);
  EXPECT_DOUBLE_EQ(c->interLatency, 5 * US);
  EXPECT_DOUBLE_EQ(c->pcieBandwidth, 25 * GB);
  EXPECT_DOUBLE_EQ(c->hostMemory, 1024 * GB);
}

TEST(ClusterFile, PresetOverride) {
  llvm::Expected<ClusterSpec> c = parseCluster(
      R"({"preset": "a100-80g", "nodes": 4,
          "device": {"matmul_efficiency": 0.6},
          "links": {"inter_node_gbs": 12.5}})",
      "override.json");
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->name, "a100-80g");
  EXPECT_EQ(c->nodes, 4);
  EXPECT_EQ(c->devicesPerNode, 8); // from the preset
  EXPECT_EQ(c->worldSize(), 32);
  EXPECT_DOUBLE_EQ(c->matmulEfficiency, 0.6);
  EXPECT_DOUBLE_EQ(c->interBandwidth, 12.5 * GB);
  // Untouched fields keep the preset's figures.
  EXPECT_DOUBLE_EQ(c->deviceMemory, 80 * GiB);
  EXPECT_DOUBLE_EQ(c->peakFlops16, 312 * TFLOPS);
  EXPECT_DOUBLE_EQ(c->intraBandwidth, 300 * GB);
  EXPECT_DOUBLE_EQ(c->memoryEfficiency, 0.8);
}

TEST(ClusterFile, NameDefaultsToFileStem) {
  std::string json = kFull;
  json.replace(json.find("\"name\": \"my-a100\", "), 19, "");
  llvm::Expected<ClusterSpec> c = parseCluster(json, "dir/big-box.json");
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->name, "big-box");
}

TEST(ClusterFile, InvalidJson) {
  std::string msg = parseError(R"({"preset": "h200",})");
  EXPECT_NE(msg.find("bad.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
  msg = parseError("[1, 2]");
  EXPECT_NE(msg.find("object"), std::string::npos) << msg;
}

TEST(ClusterFile, UnknownKeys) {
  std::string msg = parseError(R"({"preset": "h200", "gpus": 8})");
  EXPECT_NE(msg.find("bad.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'gpus'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("devices_per_node"), std::string::npos) << msg;

  msg = parseError(R"({"preset": "h200", "device": {"memory": 80}})");
  EXPECT_NE(msg.find("'device.memory'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("memory_gb"), std::string::npos) << msg;
  EXPECT_NE(msg.find("peak_tflops_16"), std::string::npos) << msg;

  msg = parseError(R"({"preset": "h200", "links": {"nvlink_gbs": 900}})");
  EXPECT_NE(msg.find("'links.nvlink_gbs'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("intra_node_gbs"), std::string::npos) << msg;
}

TEST(ClusterFile, WrongTypes) {
  struct Case {
    const char *json, *field;
  } cases[] = {
      {R"({"preset": 3})", "preset"},
      {R"({"preset": "h200", "name": ["x"]})", "name"},
      {R"({"preset": "h200", "name": ""})", "name"},
      {R"({"preset": "h200", "nodes": "4"})", "nodes"},
      {R"({"preset": "h200", "devices_per_node": 2.5})", "devices_per_node"},
      {R"({"preset": "h200", "device": 80})", "device"},
      {R"({"preset": "h200", "links": [1]})", "links"},
      {R"({"preset": "h200", "device": {"memory_gb": "80"}})",
       "device.memory_gb"},
      {R"({"preset": "h200", "links": {"pcie_gbs": true}})", "links.pcie_gbs"},
      {R"({"preset": "h200", "host": {"memory_gb": null}})", "host.memory_gb"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.json);
    std::string msg = parseError(c.json);
    EXPECT_NE(msg.find("bad.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string(c.field) + ":"), std::string::npos) << msg;
  }
}

TEST(ClusterFile, NonPositiveNumbers) {
  struct Case {
    const char *json, *field;
  } cases[] = {
      {R"({"preset": "h200", "nodes": 0})", "nodes"},
      {R"({"preset": "h200", "devices_per_node": -8})", "devices_per_node"},
      {R"({"preset": "h200", "device": {"memory_gb": 0}})", "device.memory_gb"},
      {R"({"preset": "h200", "device": {"peak_tflops_16": -1}})",
       "device.peak_tflops_16"},
      {R"({"preset": "h200", "links": {"inter_node_latency_us": 0}})",
       "links.inter_node_latency_us"},
      {R"({"preset": "h200", "host": {"memory_gb": -2}})", "host.memory_gb"},
      {R"({"preset": "h200", "links": {"intra_node_gbs": 1e999}})",
       "links.intra_node_gbs"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.json);
    std::string msg = parseError(c.json);
    EXPECT_NE(msg.find(std::string(c.field) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find("positive"), std::string::npos) << msg;
  }
}

TEST(ClusterFile, EfficienciesInUnitInterval) {
  for (const char *json :
       {R"({"preset": "h200", "device": {"matmul_efficiency": 0}})",
        R"({"preset": "h200", "device": {"matmul_efficiency": 1.2}})",
        R"({"preset": "h200", "device": {"memory_efficiency": -0.5}})"}) {
    SCOPED_TRACE(json);
    std::string msg = parseError(json);
    EXPECT_NE(msg.find("_efficiency:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(0, 1]"), std::string::npos) << msg;
  }
  llvm::Expected<ClusterSpec> one = parseCluster(
      R"({"preset": "h200", "device": {"memory_efficiency": 1}})", "ok.json");
  ASSERT_TRUE(bool(one)) << llvm::toString(one.takeError());
  EXPECT_DOUBLE_EQ(one->memoryEfficiency, 1);
}

TEST(ClusterFile, MissingRequiredFields) {
  // Remove each required field from the full description in turn.
  for (const char *field :
       {"memory_bandwidth_gbs", "peak_tflops_32", "intra_node_latency_us",
        "inter_node_gbs", "pcie_gbs"}) {
    SCOPED_TRACE(field);
    std::string json = kFull;
    size_t at = json.find(std::string("\"") + field + "\"");
    ASSERT_NE(at, std::string::npos);
    size_t end = json.find_first_of(",}", at), start = at;
    // Drop `"field": value` and the comma after it, or before it when the
    // field is the last of its object.
    if (json[end] == ',')
      ++end;
    else if (size_t comma = json.rfind(',', at); comma != std::string::npos)
      start = comma;
    json.erase(start, end - start);
    std::string msg = parseError(json);
    EXPECT_NE(msg.find("missing required field"), std::string::npos) << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << msg;
  }
  std::string msg = parseError(R"({"name": "x", "device": {"memory_gb": 8}})");
  EXPECT_NE(msg.find("device.peak_tflops_16"), std::string::npos) << msg;
  msg = parseError(R"({"name": "x"})");
  EXPECT_NE(msg.find("device.memory_gb"), std::string::npos) << msg;
}

TEST(ClusterFile, UnknownPreset) {
  std::string msg = parseError(R"({"preset": "tpu-v5"})");
  EXPECT_NE(msg.find("preset:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'tpu-v5'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a100-40g"), std::string::npos) << msg;
}

TEST(ClusterFile, WorldSizeOverflow) {
  std::string msg = parseError(
      R"({"preset": "h200", "nodes": 4611686018427387904, "devices_per_node": 4})");
  EXPECT_NE(msg.find("overflows"), std::string::npos) << msg;
}

TEST(ClusterFile, MissingFile) {
  std::string msg = errorOf(loadClusterFile("/nonexistent/x.json"));
  EXPECT_NE(msg.find("/nonexistent/x.json"), std::string::npos) << msg;
}

TEST(ClusterPrint, TableHasUnits) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printCluster(preset("a100-80g"), os);
  for (const char *expected :
       {"a100-80g", "1 node x 8 devices = 8 devices", "85.9 GB (80 GiB)", "312 TFLOP/s",
        "19.5 TFLOP/s", "2039 GB/s", "300 GB/s per direction, 2 us",
        "25 GB/s per direction, 5 us", "2048 GB"})
    EXPECT_NE(text.find(expected), std::string::npos)
        << expected << " not in:\n"
        << text;
}

} // namespace
