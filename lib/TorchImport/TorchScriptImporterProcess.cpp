// importTorchScriptFile for processes that must not load libtorch: runs
// colo-torch-import (installed next to the running executable) and reads the
// bytecode it writes. Its one-line diagnostic becomes ours.
#include "colo/Import/TorchScriptImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

using namespace mlir;

bool colo::haveTorchScriptImporter() { return true; }

/// colo-torch-import, next to the running executable.
static llvm::SmallString<256> helperPath() {
  static int anchor;
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  llvm::SmallString<256> helper(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(helper, "colo-torch-import");
  return helper;
}

std::vector<std::string> colo::supportedTorchScriptOps() {
  llvm::SmallString<256> helper = helperPath();
  llvm::SmallString<128> out;
  if (!llvm::sys::fs::can_execute(helper) ||
      llvm::sys::fs::createTemporaryFile("colo-torch-ops", "txt", out))
    return {};
  llvm::FileRemover removeOut(out);
  llvm::StringRef args[] = {helper, "--supported-ops"};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(out),
                                                std::nullopt};
  std::vector<std::string> kinds;
  if (llvm::sys::ExecuteAndWait(helper, args, std::nullopt, redirects) != 0)
    return kinds;
  if (auto buf = llvm::MemoryBuffer::getFile(out)) {
    llvm::SmallVector<llvm::StringRef> lines;
    (*buf)->getBuffer().split(lines, '\n', -1, false);
    for (llvm::StringRef line : lines)
      kinds.push_back(line.trim().str());
  }
  return kinds;
}

FailureOr<OwningOpRef<ModuleOp>>
colo::importTorchScriptFile(llvm::StringRef path, MLIRContext &context,
                            llvm::ArrayRef<std::string> inputShapes) {
  auto fail = [&](const llvm::Twine &msg) {
    return emitError(UnknownLoc::get(&context)) << msg;
  };
  llvm::SmallString<256> helper = helperPath();
  if (!llvm::sys::fs::can_execute(helper))
    return fail("cannot read TorchScript: '" + helper + "' is missing");

  llvm::SmallString<128> out, err;
  if (llvm::sys::fs::createTemporaryFile("colo-torch", "mlirbc", out) ||
      llvm::sys::fs::createTemporaryFile("colo-torch", "err", err))
    return fail("cannot create a temporary file");
  llvm::FileRemover removeOut(out), removeErr(err);

  // Options first, then `--`: a path that begins with '-' stays a path.
  std::vector<std::string> shapeArgs;
  for (const std::string &s : inputShapes)
    shapeArgs.push_back("--input-shape=" + s);
  std::vector<llvm::StringRef> args{helper, "-o", out};
  args.insert(args.end(), shapeArgs.begin(), shapeArgs.end());
  args.insert(args.end(), {"--", path});
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, std::nullopt,
                                                llvm::StringRef(err)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(helper, args, std::nullopt, redirects, 0, 0,
                                     &execError);
  if (rc != 0) {
    std::string message = "import of '" + path.str() + "' failed";
    if (auto buf = llvm::MemoryBuffer::getFile(err)) {
      llvm::StringRef text = (*buf)->getBuffer().split('\n').first;
      text.consume_front("colo: error: ");
      if (!text.empty())
        message = text.str();
    }
    if (rc < 0)
      message += " (" + execError + ")";
    return fail(message);
  }
  ParserConfig config(&context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(out, config);
  if (!module)
    return failure();
  return module;
}
