// colo checkpoint: look into the sharded checkpoints that `colo run
// --checkpoint-dir` writes, and export one as Hugging Face safetensors
// (model.safetensors, or model-0000k-of-0000n.safetensors shards with
// model.safetensors.index.json) under PyTorch state_dict names. The export
// streams: each tensor is put together from its pieces (at most one whole
// tensor in memory) and written in turn.
#include "Commands.h"

#include "colo/Runtime/Checkpoint.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Files.h"
#include "colo/Runtime/Safetensors.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

using namespace llvm;
using namespace colo::tool;
namespace rt = colo::runtime;

namespace {
cl::SubCommand checkpointCmd("checkpoint",
                             "Show a checkpoint of 'colo run --checkpoint-dir', or export it "
                             "as Hugging Face safetensors");
cl::opt<std::string> checkpointAction(cl::Positional, cl::desc("show | export"),
                                      cl::Required, cl::sub(checkpointCmd));
cl::opt<std::string>
    checkpointPath(cl::Positional,
                   cl::desc("<checkpoint directory (its newest checkpoint) or checkpoint>"),
                   cl::Required, cl::sub(checkpointCmd));
cl::opt<std::string> checkpointOutput("o", cl::desc("export: the output directory"),
                                      cl::value_desc("DIR"), cl::sub(checkpointCmd));
cl::opt<std::string> checkpointShardSize(
    "max-shard-size",
    cl::desc("export: the largest file, bytes or with K, M, G (default 5G, as "
             "transformers' save_pretrained)"),
    cl::value_desc("SIZE"), cl::init("5G"), cl::sub(checkpointCmd));
cl::opt<std::string> checkpointStripPrefix(
    "strip-prefix",
    cl::desc("export: remove this prefix from the names that have it (the attribute of a "
             "wrapper module, e.g. 'model.')"),
    cl::value_desc("PREFIX"), cl::sub(checkpointCmd));
cl::opt<bool> checkpointWithState(
    "with-state",
    cl::desc("export: also the optimizer state and the other state buffers, under their "
             "checkpoint names"),
    cl::sub(checkpointCmd));

int64_t bytesOf(const rt::Checkpoint::Tensor &t) {
  return rt::numElements(t.shape) * rt::dtypeSize(t.dtype);
}

int show(const rt::Checkpoint &c) {
  int64_t params = 0, state = 0, total = 0;
  for (const rt::Checkpoint::Tensor &t : c.tensors()) {
    (t.parameter ? params : state) += 1;
    total += bytesOf(t);
  }
  outs() << c.path() << ": step " << c.run().step << ", written by " << c.planDescription()
         << " (" << c.worldSize() << (c.worldSize() == 1 ? " rank" : " ranks") << ")\n"
         << formatv("{0} parameters and {1} other state tensors, {2:F1} MB whole\n", params,
                    state, total / 1e6);
  for (const auto &[key, value] : c.run().fields)
    outs() << "  " << key << ": " << value << "\n";
  return 0;
}

int exportCheckpoint(const rt::Checkpoint &c) {
  if (checkpointOutput.empty())
    return reportError("export needs -o DIR, the directory to write");
  std::optional<int64_t> maxShard = parseBytes(checkpointShardSize);
  if (!maxShard)
    return reportError("--max-shard-size '" + checkpointShardSize +
                       "' is not a size (bytes, or a number with K, M or G)");
  if (std::error_code ec = sys::fs::create_directories(checkpointOutput))
    return reportError("cannot create '" + checkpointOutput + "': " + ec.message());

  // Tensors in name order, cut into files of at most maxShard bytes (a larger
  // tensor gets a file of its own), as transformers' save_pretrained does.
  std::vector<std::vector<const rt::Checkpoint::Tensor *>> files(1);
  int64_t inFile = 0, total = 0;
  for (const rt::Checkpoint::Tensor &t : c.tensors()) {
    if (!t.parameter && !checkpointWithState)
      continue;
    if (inFile > 0 && inFile + bytesOf(t) > *maxShard) {
      files.emplace_back();
      inFile = 0;
    }
    files.back().push_back(&t);
    inFile += bytesOf(t);
    total += bytesOf(t);
  }
  if (files.back().empty())
    return reportError(c.path() + " holds no parameters to export");

  json::Object weightMap;
  std::vector<char> staging;
  for (size_t f = 0; f < files.size(); ++f) {
    std::string name = files.size() == 1 ? std::string("model.safetensors")
                                         : formatv("model-{0:d5}-of-{1:d5}.safetensors",
                                                   f + 1, files.size())
                                               .str();
    std::vector<rt::TensorView> views;
    for (const rt::Checkpoint::Tensor *t : files[f]) {
      StringRef exported = t->name;
      exported.consume_front(checkpointStripPrefix);
      views.push_back({exported.str(), t->dtype, t->shape, nullptr});
      if (!weightMap.try_emplace(exported, name).second)
        return reportError("two tensors are named '" + exported + "' once --strip-prefix '" +
                           checkpointStripPrefix + "' is removed");
    }
    rt::writeSafetensors(
        rt::joinPath(checkpointOutput, name), views, {{"format", "pt"}},
        [&](size_t i, std::ostream &out) {
          const rt::Checkpoint::Tensor &t = *files[f][i];
          // A whole piece is written from its mapping; blocks are put together.
          auto whole = llvm::find_if(t.pieces, [](const rt::Checkpoint::Piece &p) {
            return p.layout == rt::Checkpoint::Piece::Whole;
          });
          if (whole != t.pieces.end()) {
            out.write(static_cast<const char *>(c.pieceData(t, *whole)), bytesOf(t));
          } else {
            staging.resize(size_t(bytesOf(t)));
            c.readWhole(t, staging.data());
            out.write(staging.data(), bytesOf(t));
          }
          c.release(t);
        });
  }
  if (files.size() > 1) {
    json::Object index{{"metadata", json::Object{{"total_size", total}}},
                       {"weight_map", std::move(weightMap)}};
    std::string text = formatv("{0:2}", json::Value(std::move(index))).str();
    rt::writeFileAtomically(rt::joinPath(checkpointOutput, "model.safetensors.index.json"),
                            [&](std::ostream &out) { out << text << "\n"; });
  }
  outs() << formatv("exported step {0} of {1}: {2:F1} MB in {3} file{4} to {5}\n",
                    c.run().step, c.path(), total / 1e6, files.size(),
                    files.size() == 1 ? "" : "s", checkpointOutput);
  return 0;
}
} // namespace

cl::SubCommand &colo::tool::checkpointCommand() { return checkpointCmd; }

int colo::tool::runCheckpoint() {
  if (checkpointAction != "show" && checkpointAction != "export")
    return reportError("unknown action '" + checkpointAction + "': use show or export");
  try {
    std::unique_ptr<rt::Checkpoint> c = rt::Checkpoint::open(checkpointPath);
    return checkpointAction == "show" ? show(*c) : exportCheckpoint(*c);
  } catch (const rt::Error &e) {
    return reportError(e.what());
  } catch (const std::bad_alloc &) {
    return reportError("out of memory");
  }
}
