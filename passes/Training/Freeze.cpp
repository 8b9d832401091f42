// colo-freeze: parameters the user keeps fixed. Fine-tuning freezes parts of
// a model, and an export may not say which initializers are buffers (the
// TorchScript-based ONNX exporter writes parameters and buffers alike, so
// BART's final_logits_bias, added to the logits, would otherwise train).
// A frozen global is an ordinary non-trainable global: no gradient, no
// optimizer state, and the step never stores it.
#include "colo/Passes/Passes.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/GlobPattern.h"

namespace colo {
#define GEN_PASS_DEF_COLOFREEZE
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
struct ColoFreeze : colo::impl::ColoFreezeBase<ColoFreeze> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<std::string, llvm::GlobPattern>> patterns;
    for (const std::string &text : globals) {
      llvm::Expected<llvm::GlobPattern> pattern = llvm::GlobPattern::create(text);
      if (!pattern) {
        module.emitError() << "colo-freeze: bad pattern '" << text
                           << "': " << llvm::toString(pattern.takeError());
        return signalPassFailure();
      }
      patterns.push_back({text, std::move(*pattern)});
    }
    llvm::SmallBitVector matched(patterns.size());
    for (auto global : module.getOps<GlobalOp>())
      for (auto [i, p] : llvm::enumerate(patterns))
        if (p.second.match(global.getSymName())) {
          matched.set(i);
          global.setTrainable(false);
        }
    // A buffer the importer folded into constants is already fixed: a
    // pattern that names no global is worth a warning, not a failure.
    for (auto [i, p] : llvm::enumerate(patterns))
      if (!matched.test(i))
        module.emitWarning() << "colo-freeze: '" << p.first
                             << "' names no global of the model (nothing frozen)";
  }
};
} // namespace
