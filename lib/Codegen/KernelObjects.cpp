//===- KernelObjects.cpp - kernels to objects, cached, in parallel --------===//
#include "KernelObjects.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <dlfcn.h>

#include <mutex>

using namespace mlir;

namespace colo {
namespace {

/// Bumped when what a cached object holds changes in a way the compiler's
/// identity does not show (there is none today; the identity covers colo).
constexpr llvm::StringLiteral kCacheFormat = "colo-kernel-object-1";

void initializeTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // Lets the loop vectorizer take loops with strict floating-point sums:
    // the work around a sum (the exponentials of a softmax or a loss) runs in
    // vector lanes while the additions keep their sequential order, so the
    // results are bit for bit the scalar loop's. x86 does not enable it by
    // default, and LLVM reads it only from its command-line option.
    auto &options = llvm::cl::getRegisteredOptions();
    if (auto it = options.find("force-ordered-reductions"); it != options.end())
      (void)it->second->addOccurrence(0, "force-ordered-reductions", "true");
  });
}

/// The file this code was loaded from (the colo executable, a test binary or
/// the Python extension), its size and modification time: a rebuilt
/// compiler has another. Empty when the file cannot be found.
const std::string &compilerIdentity() {
  static const std::string identity = []() -> std::string {
    Dl_info info;
    if (!::dladdr(reinterpret_cast<void *>(&initializeTargets), &info) || !info.dli_fname)
      return "";
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(info.dli_fname, status))
      return "";
    return (llvm::Twine(info.dli_fname) + "|" + llvm::Twine(status.getSize()) + "|" +
            llvm::Twine(status.getLastModificationTime().time_since_epoch().count()))
        .str();
  }();
  return identity;
}

std::unique_ptr<llvm::TargetMachine> createMachine(const KernelTarget &target,
                                                   std::string &error) {
  llvm::Triple triple(target.triple);
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!t)
    return nullptr;
  std::unique_ptr<llvm::TargetMachine> machine(t->createTargetMachine(
      triple, target.cpu, target.features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, target.level));
  if (!machine)
    error = "cannot create an LLVM target machine for " + target.triple + " (" +
            target.cpu + ")";
  return machine;
}

/// The global values `entry` reaches: what it calls or reads, through the
/// functions and the initializers of the globals it reaches.
llvm::SmallPtrSet<const llvm::GlobalValue *, 16> reachedFrom(const llvm::Function &entry) {
  llvm::SmallPtrSet<const llvm::GlobalValue *, 16> reached;
  llvm::SmallPtrSet<const llvm::Constant *, 16> seenConstants;
  SmallVector<const llvm::GlobalValue *> work = {&entry};
  reached.insert(&entry);
  std::function<void(const llvm::Value *)> visit = [&](const llvm::Value *v) {
    if (auto *gv = dyn_cast<llvm::GlobalValue>(v)) {
      if (reached.insert(gv).second)
        work.push_back(gv);
    } else if (auto *c = dyn_cast<llvm::Constant>(v)) {
      if (seenConstants.insert(c).second)
        for (const llvm::Value *operand : c->operands())
          visit(operand);
    }
  };
  while (!work.empty()) {
    const llvm::GlobalValue *gv = work.pop_back_val();
    if (auto *f = dyn_cast<llvm::Function>(gv)) {
      for (const llvm::Instruction &inst : llvm::instructions(*f))
        for (const llvm::Value *operand : inst.operands())
          visit(operand);
    } else if (auto *g = dyn_cast<llvm::GlobalVariable>(gv); g && g->hasInitializer()) {
      visit(g->getInitializer());
    }
  }
  return reached;
}

/// `module` reduced to kernel `name` and what it reaches, the kernel renamed
/// `symbol` and everything else it defines internal.
std::unique_ptr<llvm::Module> kernelAlone(const llvm::Module &module, StringRef name,
                                          StringRef symbol) {
  const llvm::Function *entry = module.getFunction(name);
  if (!entry || entry->isDeclaration())
    return nullptr;
  llvm::SmallPtrSet<const llvm::GlobalValue *, 16> reached = reachedFrom(*entry);
  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> part = llvm::CloneModule(
      module, map, [&](const llvm::GlobalValue *gv) { return reached.contains(gv); });
  // What it does not reach is left as declarations, unused.
  SmallVector<llvm::GlobalValue *> unused;
  for (llvm::GlobalValue &gv : part->global_values())
    if (gv.isDeclaration() && gv.use_empty())
      unused.push_back(&gv);
  for (llvm::GlobalValue *gv : unused)
    gv->eraseFromParent();
  // Everything but the kernel is internal and named after the symbol, so
  // that the object is the same bytes whatever the kernel was called.
  part->getFunction(name)->setName(symbol);
  int local = 0;
  for (llvm::GlobalValue &gv : part->global_values())
    if (!gv.isDeclaration() && gv.getName() != symbol) {
      gv.setLinkage(llvm::GlobalValue::InternalLinkage);
      gv.setName(symbol + "." + llvm::Twine(local++));
    }
  part->setModuleIdentifier(symbol);
  part->setSourceFileName(symbol);
  return part;
}

/// Runs LLVM's default pipeline at the options' level, then writes the
/// object file (under a unique name, renamed into place).
std::string optimizeAndEmit(llvm::Module &module, const KernelTarget &target,
                            const KernelCompileOptions &opts, StringRef path,
                            std::string *optimizedIR) {
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine = createMachine(target, error);
  if (!machine)
    return error;
  module.setTargetTriple(llvm::Triple(target.triple));
  module.setDataLayout(machine->createDataLayout());
  // LLVM's tuning for AVX-512 processors prefers 256-bit vectors (older
  // cores slowed their clock for wider ones); the kernels' exp, tanh and
  // division chains run at twice the rate in 512-bit ones, with the same bits
  // (their reductions' lane order is written in the IR).
  bool wideVectors = machine->getMCSubtargetInfo()->checkFeatures("+avx512f");
  for (llvm::Function &f : module)
    if (!f.isDeclaration()) {
      f.addFnAttr("target-cpu", target.cpu);
      if (!target.features.empty())
        f.addFnAttr("target-features", target.features);
      if (wideVectors)
        f.addFnAttr("prefer-vector-width", "512");
    }

  // The default middle-end pipeline at the requested level, which
  // vectorizes loops for the target machine.
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions tuning;
    tuning.LoopVectorization = opts.optLevel >= 2;
    tuning.SLPVectorization = opts.optLevel >= 2;
    // No unrolling before the loop vectorizer: unrolled, the split
    // reductions' 16-lane loops left it only the loop over rows to vectorize,
    // with gathers and scatters (the GPT-2 bench's softmax kernels 30 -> 24
    // ms per step; the same bits, as unrolling keeps every operation).
    tuning.LoopUnrolling = false;
    llvm::PassBuilder pb(machine.get(), tuning);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::OptimizationLevel o = opts.optLevel >= 3   ? llvm::OptimizationLevel::O3
                                : opts.optLevel == 2 ? llvm::OptimizationLevel::O2
                                : opts.optLevel == 1 ? llvm::OptimizationLevel::O1
                                                     : llvm::OptimizationLevel::O0;
    llvm::ModulePassManager mpm = o == llvm::OptimizationLevel::O0
                                      ? pb.buildO0DefaultPipeline(o)
                                      : pb.buildPerModuleDefaultPipeline(o);
    mpm.run(module, mam);
  }
  if (llvm::verifyModule(module, &llvm::errs()))
    return "the optimized kernels are not valid LLVM IR";
  if (optimizedIR) {
    llvm::raw_string_ostream os(*optimizedIR);
    module.print(os, nullptr);
  }

  int fd;
  SmallString<128> partial;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(path + ".partial-%%%%%%%%", fd,
                                                           partial))
    return ("cannot write '" + path + "': " + ec.message()).str();
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      return "the LLVM target cannot emit object files";
    codegen.run(module);
    os.close();
    if (os.has_error()) {
      llvm::sys::fs::remove(partial);
      return ("cannot write '" + partial + "': " + os.error().message()).str();
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(partial, path)) {
    llvm::sys::fs::remove(partial);
    return ("cannot write '" + path + "': " + ec.message()).str();
  }
  return "";
}

/// `s` quoted for a GCC response file.
std::string quoted(StringRef s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      q += '\\';
    q += c;
  }
  return q + "\"";
}

} // namespace

FailureOr<KernelTarget> resolveKernelTarget(const KernelCompileOptions &opts,
                                            std::string &error) {
  initializeTargets();
  KernelTarget target;
  target.triple = llvm::sys::getProcessTriple();
  if (!llvm::TargetRegistry::lookupTarget(llvm::Triple(target.triple), error)) {
    error = "no LLVM target for " + target.triple + ": " + error;
    return failure();
  }
  target.cpu = opts.cpu.empty() ? llvm::sys::getHostCPUName().str() : opts.cpu;
  target.features = opts.features;
  if (target.features.empty() && opts.cpu.empty()) {
    llvm::SubtargetFeatures host;
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      host.AddFeature(f.first(), f.second);
    target.features = host.getString();
  }
  target.level = opts.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
                 : opts.optLevel == 2 ? llvm::CodeGenOptLevel::Default
                 : opts.optLevel == 1 ? llvm::CodeGenOptLevel::Less
                                      : llvm::CodeGenOptLevel::None;
  return target;
}

KernelKey kernelKey(func::FuncOp kernel, const KernelTarget &target,
                    const KernelCompileOptions &opts) {
  // The kernel without its name and locations: the same body under another
  // name, or from another layer of the model, is the same object.
  auto body = cast<func::FuncOp>(kernel->clone());
  body.setSymName("kernel");
  Location unknown = UnknownLoc::get(kernel.getContext());
  body->walk([&](Operation *op) {
    op->setLoc(unknown);
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setLoc(unknown);
  });
  std::string bytecode;
  llvm::raw_string_ostream os(bytecode);
  (void)writeBytecodeToFile(body, os);
  body->erase();

  auto hex = [](llvm::SHA256 &hash) { return llvm::toHex(hash.final(), /*LowerCase=*/true); };
  llvm::SHA256 content;
  for (StringRef part : {StringRef(kCacheFormat), StringRef(LLVM_VERSION_STRING),
                         StringRef(target.triple), StringRef(target.cpu),
                         StringRef(target.features)}) {
    content.update(part);
    content.update(StringRef("\0", 1));
  }
  content.update(llvm::formatv("O{0} noalias={1} gpu-nests={2};", opts.optLevel, opts.noAlias,
                               opts.gpuLoopNests)
                     .str());
  content.update(bytecode);
  KernelKey key;
  key.content = hex(content);
  llvm::SHA256 file;
  file.update(key.content);
  file.update(compilerIdentity());
  key.file = hex(file);
  return key;
}

std::string openKernelCache(const KernelCompileOptions &opts) {
  if (opts.cacheDir.empty() || opts.llvmIRDump || compilerIdentity().empty() ||
      llvm::sys::fs::create_directories(opts.cacheDir))
    return "";
  return opts.cacheDir;
}

std::string emitKernelObjects(const llvm::Module &module, ArrayRef<KernelObject> objects,
                              const KernelTarget &target, const KernelCompileOptions &opts) {
  // Each kernel as bitcode for a context of its own, so that threads can
  // compile kernels side by side (as LLVM's parallel LTO code generation
  // does).
  std::vector<SmallString<0>> bitcode(objects.size());
  for (auto [object, bits] : llvm::zip(objects, bitcode)) {
    std::unique_ptr<llvm::Module> part = kernelAlone(module, object.name, object.symbol);
    if (!part)
      return "no kernel '" + object.name + "' in the lowered module";
    llvm::raw_svector_ostream os(bits);
    llvm::WriteBitcodeToFile(*part, os);
  }
  std::vector<std::string> errors(objects.size()), irs(objects.size());
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency());
    for (size_t i = 0; i < objects.size(); ++i)
      pool.async([&, i] {
        llvm::LLVMContext context;
        llvm::Expected<std::unique_ptr<llvm::Module>> part =
            llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode[i], objects[i].name), context);
        if (!part) {
          errors[i] = llvm::toString(part.takeError());
          return;
        }
        errors[i] = optimizeAndEmit(**part, target, opts, objects[i].path,
                                    opts.llvmIRDump ? &irs[i] : nullptr);
      });
    pool.wait();
  }
  if (opts.llvmIRDump)
    for (const std::string &ir : irs)
      *opts.llvmIRDump << ir;
  for (const std::string &error : errors)
    if (!error.empty())
      return error;
  return "";
}

std::string linkKernelObjects(ArrayRef<KernelObject> objects, StringRef soPath,
                              const KernelCompileOptions &opts) {
  std::string driver = opts.linker;
  if (!llvm::sys::path::has_parent_path(driver)) {
    llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(driver);
    if (!found)
      return "cannot link the kernels: no C compiler driver '" + driver +
             "' on PATH (install gcc or clang, or set KernelCompileOptions::linker)";
    driver = *found;
  }
  // The arguments in a response file: a model has thousands of kernels.
  SmallString<128> argsPath, logPath;
  int fd;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("colo-kernel-link", "rsp", fd, argsPath))
    return "cannot link the kernels: " + ec.message();
  {
    llvm::raw_fd_ostream args(fd, /*shouldClose=*/true);
    args << "-shared -o " << quoted(soPath) << "\n";
    llvm::StringSet<> linked;
    for (const KernelObject &object : objects)
      if (linked.insert(object.path).second)
        args << quoted(object.path) << "\n";
    for (const KernelObject &object : objects)
      args << quoted("-Wl,--defsym," + object.name + "=" + object.symbol) << "\n";
    args << "-lm\n";
  }
  if (llvm::sys::fs::createTemporaryFile("colo-kernel-link", "log", logPath))
    logPath.clear();
  std::string at = ("@" + argsPath).str();
  SmallVector<StringRef> argv = {driver, at};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(logPath),
                                          StringRef(logPath)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(driver, argv, std::nullopt,
                                     logPath.empty() ? ArrayRef<std::optional<StringRef>>{}
                                                     : ArrayRef(redirects),
                                     0, 0, &message);
  std::string log;
  if (!logPath.empty()) {
    if (auto buf = llvm::MemoryBuffer::getFile(logPath))
      log = (*buf)->getBuffer().trim().str();
    llvm::sys::fs::remove(logPath);
  }
  llvm::sys::fs::remove(argsPath);
  if (rc == 0)
    return "";
  std::string error = ("linking '" + soPath + "' with '" + driver + "' failed (exit code " +
                       llvm::Twine(rc) + ")")
                          .str();
  if (!message.empty())
    error += ": " + message;
  if (!log.empty())
    error += ":\n" + log;
  return error;
}

} // namespace colo
