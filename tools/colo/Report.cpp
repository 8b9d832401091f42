// The error line every colo command prints (colo and colo-run).
#include "Commands.h"

#include "llvm/Support/WithColor.h"

int colo::tool::reportError(const llvm::Twine &msg) {
  llvm::WithColor::error(llvm::errs(), "colo") << msg << "\n";
  return 1;
}
