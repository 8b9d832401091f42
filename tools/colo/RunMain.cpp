// colo-run: `colo run` alone, the same code without the compiler. It links no
// MLIR and LLVM only statically (LLVMSupport), so that it and the shared
// libraries it needs fit what is carried to a machine that has none of this
// project's packages: a GPU machine running executables compiled elsewhere
// (bench/gpu_check.sh). `colo-run EXE_DIR [options]` is `colo run EXE_DIR
// [options]`.
#include "Commands.h"

#include "llvm/Support/InitLLVM.h"

#include <cstring>
#include <vector>

using namespace llvm;

// `colo train` shares the run options; colo-run has no compiler to train with.
cl::SubCommand &colo::tool::trainCommand() {
  static cl::SubCommand train("train", "Compile and train (colo only, not colo-run)");
  return train;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  using namespace colo::tool;
  runCommand();
  // The run subcommand's options, as if `colo run` had been typed.
  std::vector<char *> args(argv, argv + argc);
  static char run[] = "run";
  args.insert(args.begin() + 1, run);
  cl::ParseCommandLineOptions(int(args.size()), args.data(),
                              "colo-run: colo run without the compiler\n\n"
                              "  colo-run EXE_DIR --steps 100 --data train.npz\n");
  return runRun();
}
