//===- CudaDevice.cpp - An NVIDIA GPU behind the device interface ---------===//

#include "colo/Runtime/CudaDevice.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Executable.h"

#include <dlfcn.h>

#include <cstdlib>

#ifdef COLO_HAVE_CUDA
#include "CudaBlas.h"
#include "CudaDnn.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#endif

namespace colo::runtime {

std::string cudaGpuProblem() {
  // Through dlopen: colo runs on machines without a driver.
  void *driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver)
    return "this machine has no CUDA driver (libcuda.so.1 cannot be loaded)";
  using Init = int (*)(unsigned);
  using Count = int (*)(int *);
  auto init = reinterpret_cast<Init>(::dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<Count>(::dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  std::string problem;
  if (!init || !count)
    problem = "libcuda.so.1 lacks cuInit or cuDeviceGetCount";
  else if (int rc = init(0); rc != 0)
    problem = "the CUDA driver does not start (cuInit returned " + std::to_string(rc) + ")";
  else if (count(&devices) != 0 || devices == 0)
    problem = "this machine has no CUDA GPU";
  ::dlclose(driver);
  return problem;
}

int localRank(int rank) {
  for (const char *var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char *value = std::getenv(var))
      return std::atoi(value);
  return rank;
}

std::unique_ptr<Device> createDeviceFor(const Executable &exe, int rank, GemmLibrary gemm) {
  if (exe.program().target() != "cuda")
    return createCpuDevice(gemm);
  std::string head =
      "'" + exe.directory() + "' was compiled for CUDA (colo compile --target cuda) and ";
  if (std::string problem = cudaGpuProblem(); !problem.empty())
    throw Error(head + problem + ": it runs on NVIDIA GPUs only");
  try {
    return createCudaDevice(localRank(rank));
  } catch (const Error &e) {
    throw Error(head + "cannot run on this machine's GPU: " + e.what());
  }
}

#ifndef COLO_HAVE_CUDA

std::unique_ptr<Device> createCudaDevice(int) {
  throw Error("this colo was built without the CUDA toolkit (docs/cuda.md)");
}

#else

namespace {

void check(cudaError_t code, const char *call, const std::string &what) {
  if (code != cudaSuccess)
    throw Error(what + ": " + call + " failed: " + cudaGetErrorName(code) + " (" +
                cudaGetErrorString(code) + ")");
}

class CudaEvent final : public Device::Event {
public:
  CudaEvent(cudaStream_t stream, unsigned flags) {
    check(cudaEventCreateWithFlags(&event, flags), "cudaEventCreateWithFlags", "an event");
    check(cudaEventRecord(event, stream), "cudaEventRecord", "an event");
  }
  ~CudaEvent() override { cudaEventDestroy(event); }
  bool complete() const override { return cudaEventQuery(event) == cudaSuccess; }
  cudaEvent_t event = nullptr;
};

/// The largest power of two, up to 256, that divides the address (what
/// cuBLASLt's heuristics may assume of an operand).
uint32_t alignmentOf(const void *p) {
  uint32_t a = 256;
  while (a > 1 && reinterpret_cast<uintptr_t>(p) % a)
    a /= 2;
  return a;
}

/// cuBLASLt's workspace: what its heuristics may use per matmul.
constexpr int64_t kLtWorkspaceBytes = 32 << 20;

class CudaDevice final : public Device {
public:
  explicit CudaDevice(int ordinal) {
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount", "the CUDA device");
    if (count == 0)
      throw Error("no CUDA GPU is visible");
    ordinal_ = ordinal % count;
    check(cudaSetDevice(ordinal_), "cudaSetDevice", "the CUDA device");
    check(cudaGetDeviceProperties(&props_, ordinal_), "cudaGetDeviceProperties", "the CUDA device");
    check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "cudaStreamCreate",
          "the copy queue");
    checkCublas(cublasLt().cublasLtCreate(&lt_), "cublasLtCreate", "the CUDA device");
  }

  ~CudaDevice() override {
    cudaDeviceSynchronize();
    for (void *p : owned_)
      free(p);
    for (auto &[name, library] : libraries_)
      cudaLibraryUnload(library);
    for (auto &[start, end] : copyTimes_) {
      cudaEventDestroy(start);
      cudaEventDestroy(end);
    }
    if (lt_)
      cublasLt().cublasLtDestroy(lt_);
    if (dnn_)
      cudnn().cudnnDestroy(dnn_);
    if (copy_)
      cudaStreamDestroy(copy_);
  }

  /// CUDA's name of the GPU: "NVIDIA H200".
  std::string name() const override { return props_.name; }
  /// The GPU's own memory is not the host's: the session copies.
  bool hostReaches(MemorySpace space) const override { return space != MemorySpace::Device; }

  PreparedOp prepareKernel(KernelFn, std::vector<void *>, int64_t, std::vector<int64_t>) override {
    throw Error("a CUDA device runs the kernels of kernels.cuda.pb, not a CPU library's");
  }

  PreparedOp prepareCudaKernel(const CudaKernels &all, const CudaKernel &kernel,
                               std::vector<void *> args) override {
    std::string what = "kernel '" + kernel.name() + "'";
    // The kernels run one after another on the compute queue, so their
    // temporaries share one block, as large as the largest kernel needs;
    // a kernel's are at these offsets in it.
    std::vector<int64_t> offsets;
    int64_t bytes = 0;
    for (int64_t size : kernel.temporary_bytes()) {
      offsets.push_back(bytes);
      bytes += (size + 255) / 256 * 256;
    }
    grow(temporaries_, temporaryBytes_, bytes, "the kernels' temporaries");
    struct Launch {
      cudaKernel_t fn;
      dim3 grid, block;
      std::vector<void *> values, params;
      std::vector<std::pair<size_t, int64_t>> temporaries; ///< (value, offset)
    };
    auto launches = std::make_shared<std::vector<Launch>>();
    for (const CudaLaunch &l : kernel.launches()) {
      Launch x{function(all, l.module(), l.function()),
               dim3(unsigned(l.grid())),
               dim3(unsigned(l.block())),
               {},
               {},
               {}};
      for (const CudaArg &a : l.args()) {
        if (a.has_temporary())
          x.temporaries.push_back({x.values.size(), offsets.at(size_t(a.temporary()))});
        x.values.push_back(a.has_temporary()  ? nullptr
                           : a.has_constant() ? constant(all, a.constant())
                                              : args.at(size_t(a.argument())));
      }
      launches->push_back(std::move(x));
    }
    // cudaLaunchKernel takes the address of each parameter's value.
    for (Launch &x : *launches)
      for (void *&value : x.values)
        x.params.push_back(&value);
    return [this, launches, what] {
      for (Launch &x : *launches) {
        for (auto [value, offset] : x.temporaries)
          x.values[value] = temporaries_ + offset;
        check(cudaLaunchKernel(reinterpret_cast<const void *>(x.fn), x.grid, x.block,
                               x.params.data(), 0, current_),
              "cudaLaunchKernel", what);
      }
    };
  }

  PreparedGemm prepareGemm(const Gemm &gemm, DType dtype, const void *a, const void *b, void *c,
                           GemmEpilogue epilogue, std::shared_ptr<Scratch>) override {
    if (!workspace_)
      workspace_ = own(allocate(MemorySpace::Device, kLtWorkspaceBytes, "cuBLASLt's workspace"));
    struct Call {
      std::shared_ptr<LtDescriptors> desc;
      cublasLtMatmulAlgo_t algo;
      const char *a, *b, *c;
      char *d;
      double alpha, beta;
    };
    auto calls = std::make_shared<std::vector<Call>>();
    int64_t size = dtypeSize(dtype);
    for (const LtMatmul &mm :
         planLtMatmuls(geometryOf(gemm), bool(epilogue.bias), bool(epilogue.residual))) {
      Call call{std::make_shared<LtDescriptors>(mm, dtype, epilogue.bias),
                {},
                static_cast<const char *>(b) + mm.offsetA * size,
                static_cast<const char *>(a) + mm.offsetB * size,
                nullptr,
                static_cast<char *>(c) + mm.offsetC * size,
                mm.alpha,
                mm.beta};
      call.c = mm.residualAsC
                   ? reinterpret_cast<const char *>(epilogue.residual) + mm.offsetC * size
                   : call.d;
      call.algo = chooseAlgorithm(*call.desc, call.a, call.b, call.c, call.d);
      calls->push_back(std::move(call));
    }
    PreparedOp run = [this, calls] {
      for (const Call &x : *calls) {
        float alpha32 = float(x.alpha), beta32 = float(x.beta);
        bool wide = x.desc->scaleType == CUDA_R_64F;
        checkCublas(cublasLt().cublasLtMatmul(
                        lt_, x.desc->op, wide ? (const void *)&x.alpha : &alpha32, x.a, x.desc->a,
                        x.b, x.desc->b, wide ? (const void *)&x.beta : &beta32, x.c, x.desc->c, x.d,
                        x.desc->d, &x.algo, workspace_, kLtWorkspaceBytes, current_),
                    "cublasLtMatmul", "a Gemm");
      }
    };
    return {std::move(run),
            "cuBLASLt " + std::to_string(cublasLt().cublasLtGetVersion()) + " on " + props_.name};
  }

  PreparedOp prepareConv(const Conv2d &conv, float *x, float *weight, float *bias, float *y,
                         std::shared_ptr<Scratch>) override {
    auto d = std::make_shared<ConvDescriptors>(geometryOf(conv));
    cudnnHandle_t h = dnn();
    const char *what = "a convolution";
    switch (conv.mode()) {
    case Conv2d::FORWARD: {
      auto algo = algorithm<cudnnConvolutionFwdAlgoPerf_t>(
          [&](int n, int *found, auto *perf) {
            return cudnn().cudnnGetConvolutionForwardAlgorithm_v7(h, d->x, d->weight, d->conv, d->y,
                                                                  n, found, perf);
          },
          "cudnnGetConvolutionForwardAlgorithm_v7", what);
      return [this, d, x, weight, bias, y, algo, what] {
        float one = 1, zero = 0;
        checkCudnn(cudnn().cudnnConvolutionForward(dnn(), &one, d->x, x, d->weight, weight, d->conv,
                                                   algo, dnnWorkspace_, size_t(dnnWorkspaceBytes_),
                                                   &zero, d->y, y),
                   "cudnnConvolutionForward", what);
        if (bias)
          checkCudnn(cudnn().cudnnAddTensor(dnn(), &one, d->bias, bias, &one, d->y, y),
                     "cudnnAddTensor", what);
      };
    }
    case Conv2d::BACKWARD_DATA: {
      auto algo = algorithm<cudnnConvolutionBwdDataAlgoPerf_t>(
          [&](int n, int *found, auto *perf) {
            return cudnn().cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d->weight, d->y, d->conv,
                                                                       d->x, n, found, perf);
          },
          "cudnnGetConvolutionBackwardDataAlgorithm_v7", what);
      return [this, d, x, weight, y, algo, what] {
        float one = 1, zero = 0;
        checkCudnn(cudnn().cudnnConvolutionBackwardData(dnn(), &one, d->weight, weight, d->y, y,
                                                        d->conv, algo, dnnWorkspace_,
                                                        size_t(dnnWorkspaceBytes_), &zero, d->x, x),
                   "cudnnConvolutionBackwardData", what);
      };
    }
    default: {
      auto algo = algorithm<cudnnConvolutionBwdFilterAlgoPerf_t>(
          [&](int n, int *found, auto *perf) {
            return cudnn().cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d->x, d->y, d->conv,
                                                                         d->weight, n, found, perf);
          },
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7", what);
      return [this, d, x, weight, bias, y, algo, what] {
        float one = 1, zero = 0;
        checkCudnn(cudnn().cudnnConvolutionBackwardFilter(
                       dnn(), &one, d->x, x, d->y, y, d->conv, algo, dnnWorkspace_,
                       size_t(dnnWorkspaceBytes_), &zero, d->weight, weight),
                   "cudnnConvolutionBackwardFilter", what);
        if (bias)
          checkCudnn(
              cudnn().cudnnConvolutionBackwardBias(dnn(), &one, d->y, y, &zero, d->bias, bias),
              "cudnnConvolutionBackwardBias", what);
      };
    }
    }
  }

  PreparedOp preparePool(const Pool2d &pool, float *x, float *y, float *dx, float *dy) override {
    bool max = pool.mode() == Pool2d::MAX_FORWARD || pool.mode() == Pool2d::MAX_BACKWARD;
    WindowGeometry g = geometryOf(pool);
    auto d = std::make_shared<PoolDescriptors>(g, max, pool.count_include_pad());
    dnn();
    const char *what = "a pooling";
    if (pool.mode() == Pool2d::MAX_FORWARD || pool.mode() == Pool2d::AVG_FORWARD)
      return [this, d, x, y, what] {
        float one = 1, zero = 0;
        checkCudnn(cudnn().cudnnPoolingForward(dnn(), d->pool, &one, d->x, x, &zero, d->y, y),
                   "cudnnPoolingForward", what);
      };
    // cuDNN's backward reads the forward's output: max pooling recomputes
    // it into a buffer of its own (the step has x, not y); average pooling
    // reads neither x nor y, which get dx and dy to point at.
    float *forward =
        max ? static_cast<float *>(own(allocate(MemorySpace::Device, g.n * g.c * g.oh * g.ow * 4,
                                                "max pooling's recomputed output")))
            : nullptr;
    return [this, d, x, dx, dy, forward, what] {
      float one = 1, zero = 0;
      if (forward)
        checkCudnn(cudnn().cudnnPoolingForward(dnn(), d->pool, &one, d->x, x, &zero, d->y, forward),
                   "cudnnPoolingForward", what);
      checkCudnn(cudnn().cudnnPoolingBackward(dnn(), d->pool, &one, d->y, forward ? forward : dy,
                                              d->y, dy, d->x, forward ? x : dx, &zero, d->x, dx),
                 "cudnnPoolingBackward", what);
    };
  }

  PreparedOp prepareCopy(void *dst, const void *src, int64_t bytes) override {
    auto *d = static_cast<char *>(dst);
    auto *s = static_cast<const char *>(src);
    if (d != s && d < s + bytes && s < d + bytes) {
      // Overlapping ranges: memmove's result, through a buffer of its own.
      char *staging = static_cast<char *>(
          own(allocate(MemorySpace::Device, bytes, "an overlapping copy's staging")));
      return [this, d, s, staging, bytes] {
        copyOn(current_, staging, s, bytes);
        copyOn(current_, d, staging, bytes);
      };
    }
    return [this, d, s, bytes] { copyOn(current_, d, s, bytes); };
  }

  void launch(Queue queue, const PreparedOp &work) override {
    current_ = streamOf(queue);
    work();
    current_ = cudaStreamLegacy;
  }
  void copyAsync(Queue queue, void *dst, const void *src, int64_t bytes) override {
    cudaStream_t stream = streamOf(queue);
    if (queue != Queue::Copy) {
      copyOn(stream, dst, src, bytes);
      return;
    }
    cudaEvent_t start, end;
    check(cudaEventCreate(&start), "cudaEventCreate", "a copy");
    check(cudaEventCreate(&end), "cudaEventCreate", "a copy");
    copyTimes_.push_back({start, end});
    check(cudaEventRecord(start, stream), "cudaEventRecord", "a copy");
    copyOn(stream, dst, src, bytes);
    check(cudaEventRecord(end, stream), "cudaEventRecord", "a copy");
  }
  std::shared_ptr<Event> record(Queue queue) override {
    return std::make_shared<CudaEvent>(streamOf(queue), cudaEventDisableTiming);
  }
  void wait(Queue queue, const Event &event) override {
    check(cudaStreamWaitEvent(streamOf(queue), static_cast<const CudaEvent &>(event).event, 0),
          "cudaStreamWaitEvent", "a queue");
  }
  void synchronize(Queue queue) override {
    // A kernel's fault surfaces here, at the first synchronization after it.
    check(cudaStreamSynchronize(streamOf(queue)), "cudaStreamSynchronize",
          queue == Queue::Copy ? "the copy queue" : "the compute queue");
  }
  void synchronize(const Event &event) override {
    check(cudaEventSynchronize(static_cast<const CudaEvent &>(event).event), "cudaEventSynchronize",
          "an event");
  }
  // Copies go at the speed of the GPU's own link: nothing to emulate.
  void setLinkBandwidth(double) override {}
  double copyQueueBusySeconds() override {
    synchronize(Queue::Copy);
    for (auto &[start, end] : copyTimes_) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, end), "cudaEventElapsedTime", "a copy");
      copyBusy_ += ms / 1e3;
      cudaEventDestroy(start);
      cudaEventDestroy(end);
    }
    copyTimes_.clear();
    return copyBusy_;
  }

protected:
  void *allocateIn(MemorySpace space, int64_t bytes) override {
    void *p = nullptr;
    switch (space) {
    case MemorySpace::Device:
      return cudaMalloc(&p, size_t(bytes)) == cudaSuccess ? p : nullptr;
    case MemorySpace::PinnedHost:
      return cudaMallocHost(&p, size_t(bytes)) == cudaSuccess ? p : nullptr;
    case MemorySpace::Host:
      return allocateBuffer(bytes);
    }
    return nullptr;
  }
  void zeroIn(MemorySpace space, void *p, int64_t bytes) override {
    if (space != MemorySpace::Device) {
      Device::zeroIn(space, p, bytes);
      return;
    }
    check(cudaMemset(p, 0, size_t(bytes)), "cudaMemset", "device memory");
  }
  void freeIn(MemorySpace space, void *p) override {
    if (space == MemorySpace::Host) {
      std::free(p);
      return;
    }
    // Work in flight may still use it.
    cudaDeviceSynchronize();
    if (space == MemorySpace::PinnedHost)
      cudaFreeHost(p);
    else
      cudaFree(p);
  }

private:
  void *own(void *p) {
    owned_.push_back(p);
    return p;
  }
  cudaStream_t streamOf(Queue queue) const {
    return queue == Queue::Copy ? copy_ : cudaStreamLegacy;
  }
  void copyOn(cudaStream_t stream, void *dst, const void *src, int64_t bytes) {
    check(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDefault, stream), "cudaMemcpyAsync",
          "a copy");
  }

  /// Constant `index` of `all` in device memory, uploaded at its first use.
  void *constant(const CudaKernels &all, int index) {
    const CudaConstant &c = all.constants(index);
    auto [it, added] = constants_.try_emplace(c.name(), nullptr);
    if (added) {
      it->second = own(
          allocate(MemorySpace::Device, int64_t(c.bytes().size()), "constant '" + c.name() + "'"));
      check(cudaMemcpy(it->second, c.bytes().data(), c.bytes().size(), cudaMemcpyHostToDevice),
            "cudaMemcpy", "constant '" + c.name() + "'");
    }
    return it->second;
  }

  /// The entry `name` of module `module`, its PTX loaded for this GPU.
  cudaKernel_t function(const CudaKernels &all, const std::string &module,
                        const std::string &name) {
    auto it = libraries_.find(module);
    if (it == libraries_.end()) {
      const CudaModule *found = nullptr;
      for (const CudaModule &m : all.modules())
        if (m.name() == module)
          found = &m;
      if (!found)
        throw Error("no CUDA module '" + module + "' in kernels.cuda.pb");
      const std::string &ptx = ptxFor(*found);
      cudaLibrary_t library = nullptr;
      check(cudaLibraryLoadData(&library, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0),
            "cudaLibraryLoadData", "CUDA module '" + module + "'");
      it = libraries_.emplace(module, library).first;
    }
    cudaKernel_t kernel = nullptr;
    check(cudaLibraryGetKernel(&kernel, it->second, name.c_str()), "cudaLibraryGetKernel",
          "entry '" + name + "' of CUDA module '" + module + "'");
    return kernel;
  }

  /// The PTX of the newest architecture not above this GPU's: the driver
  /// compiles it for the GPU when the module loads.
  const std::string &ptxFor(const CudaModule &module) const {
    int mine = props_.major * 10 + props_.minor, best = -1;
    const std::string *ptx = nullptr;
    std::string have;
    for (const auto &[chip, text] : module.ptx()) {
      have += (have.empty() ? "" : ", ") + chip;
      int sm = chip.rfind("sm_", 0) == 0 ? std::atoi(chip.c_str() + 3) : -1;
      if (sm > best && sm <= mine) {
        best = sm;
        ptx = &text;
      }
    }
    if (!ptx)
      throw Error("CUDA module '" + module.name() + "' has PTX for " + have + ", none of which " +
                  props_.name + " (sm_" + std::to_string(mine) + ") runs");
    return *ptx;
  }

  /// cuDNN's handle on the compute queue, created when first needed.
  cudnnHandle_t dnn() {
    if (!dnn_) {
      checkCudnn(cudnn().cudnnCreate(&dnn_), "cudnnCreate", "the CUDA device");
      checkCudnn(cudnn().cudnnSetStream(dnn_, cudaStreamLegacy), "cudnnSetStream",
                 "the CUDA device");
    }
    return dnn_;
  }
  /// The first of the algorithms cuDNN's heuristics rank (`query(n, &found,
  /// perf)`, through `call`) that works and is deterministic (runs repeat
  /// exactly), with the shared workspace grown to what it needs.
  template <typename Perf, typename Query>
  decltype(Perf::algo) algorithm(Query query, const char *call, const char *what) {
    Perf perf[8];
    int found = 0;
    checkCudnn(query(8, &found, perf), call, what);
    for (int i = 0; i < found; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC) {
        grow(dnnWorkspace_, dnnWorkspaceBytes_, int64_t(perf[i].memory), "cuDNN's workspace");
        return perf[i].algo;
      }
    throw Error(std::string("cuDNN has no deterministic algorithm for ") + what + " on " +
                props_.name);
  }
  /// Grows `block` (of `held` bytes) to `need`: memory that steps share
  /// because they run one at a time, and read at run time. Freeing the old
  /// block waits for the work that may still use it.
  void grow(char *&block, int64_t &held, int64_t need, const std::string &what) {
    if (need <= held)
      return;
    if (block) {
      owned_.erase(std::find(owned_.begin(), owned_.end(), block));
      free(block);
    }
    block = static_cast<char *>(own(allocate(MemorySpace::Device, need, what)));
    held = need;
  }

  cublasLtMatmulAlgo_t chooseAlgorithm(const LtDescriptors &desc, const void *a, const void *b,
                                       const void *c, const void *d) {
    const char *what = "a Gemm's cuBLASLt algorithm";
    cublasLtMatmulPreference_t pref = nullptr;
    checkCublas(cublasLt().cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate",
                what);
    std::unique_ptr<void, void (*)(void *)> guard(pref, [](void *p) {
      cublasLt().cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t(p));
    });
    uint64_t workspace = kLtWorkspaceBytes;
    checkCublas(cublasLt().cublasLtMatmulPreferenceSetAttribute(
                    pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace),
                "cublasLtMatmulPreferenceSetAttribute", what);
    std::pair<cublasLtMatmulPreferenceAttributes_t, const void *> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, d}};
    for (auto [attribute, p] : alignments) {
      uint32_t alignment = alignmentOf(p);
      checkCublas(cublasLt().cublasLtMatmulPreferenceSetAttribute(pref, attribute, &alignment,
                                                                  sizeof alignment),
                  "cublasLtMatmulPreferenceSetAttribute", what);
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    checkCublas(cublasLt().cublasLtMatmulAlgoGetHeuristic(lt_, desc.op, desc.a, desc.b, desc.c,
                                                          desc.d, pref, 1, &result, &found),
                "cublasLtMatmulAlgoGetHeuristic", what);
    if (found == 0)
      throw Error("cuBLASLt has no algorithm for this product on " + std::string(props_.name));
    return result.algo;
  }

  int ordinal_ = 0;
  cudaDeviceProp props_{};
  cudaStream_t copy_ = nullptr;
  cudaStream_t current_ = cudaStreamLegacy;
  cublasLtHandle_t lt_ = nullptr;
  void *workspace_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  char *dnnWorkspace_ = nullptr;
  int64_t dnnWorkspaceBytes_ = 0;
  std::vector<void *> owned_;
  std::map<std::string, cudaLibrary_t> libraries_;
  std::map<std::string, void *> constants_;
  char *temporaries_ = nullptr;
  int64_t temporaryBytes_ = 0;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> copyTimes_;
  double copyBusy_ = 0;
};

} // namespace

std::unique_ptr<Device> createCudaDevice(int ordinal) {
  return std::make_unique<CudaDevice>(ordinal);
}

#endif

} // namespace colo::runtime
