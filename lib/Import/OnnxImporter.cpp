// The ONNX importer's graph walk: loading and checking the file, deciding
// which initializers are parameters, folding shape subgraphs on the host and
// dispatching every other node to its op translation (OnnxOps.cpp).
#include "colo/Import/OnnxImporter.h"

#include "OnnxImporterImpl.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/BuiltinDialect.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/stubs/logging.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>

using namespace mlir;

namespace colo::onnx_import {

namespace {
/// Ops that only move, view or convert data: an initializer passing through
/// them is still the same tensor.
bool passesThrough(llvm::StringRef op) {
  static const llvm::StringRef ops[] = {
      "Identity", "Cast", "CastLike", "Reshape", "Unsqueeze", "Squeeze",
      "Flatten", "Transpose", "Expand", "Slice", "Gather", "Concat", "Split",
      "SplitToSequence", "SequenceAt", "Shape", "Size"};
  return llvm::is_contained(ops, op);
}

/// Names from a corrupt file may hold any bytes; messages stay printable.
std::string printable(llvm::StringRef s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os.write_escaped(s);
  return out;
}

/// Inputs an op cannot do without; checked before any translation reads them.
int requiredInputs(llvm::StringRef op, int64_t opset) {
  static const llvm::StringMap<int> table = {
      {"Add", 2}, {"Sub", 2}, {"Mul", 2}, {"Div", 2}, {"Pow", 2}, {"Mod", 2},
      {"Equal", 2}, {"Less", 2}, {"LessOrEqual", 2}, {"Greater", 2},
      {"GreaterOrEqual", 2}, {"And", 2}, {"Or", 2}, {"Xor", 2}, {"Where", 3},
      {"CastLike", 2}, {"MatMul", 2}, {"Gemm", 2}, {"Conv", 2},
      {"BatchNormalization", 5}, {"Reshape", 2}, {"Slice", 3}, {"SequenceAt", 2},
      {"Gather", 2}, {"GatherND", 2}, {"GatherElements", 2}, {"Expand", 2}, {"Range", 3},
      {"CumSum", 2}, {"SequenceEmpty", 0}, {"SequenceInsert", 2}, {"ScatterND", 3},
      {"ScatterElements", 3}};
  if (op == "Constant")
    return 0;
  if (op == "Unsqueeze")
    return opset >= 13 ? 2 : 1;
  auto it = table.find(op);
  return it == table.end() ? 1 : it->second;
}

int64_t elementBytes(int32_t dtype) {
  switch (dtype) {
  case kDouble: case kInt64: return 8;
  case kFloat: case kInt32: return 4;
  case kFloat16: case kBFloat16: case kInt16: return 2;
  default: return 1;
  }
}

std::string externalField(const onnx::TensorProto &t, llvm::StringRef key) {
  for (const auto &kv : t.external_data())
    if (kv.key() == key)
      return kv.value();
  return {};
}

/// External data field `key` ("offset", "length") of `t` as a byte count:
/// `fallback` when absent, -1 when it is not a non-negative decimal integer
/// below 2^62 (so that offset + length cannot overflow).
int64_t externalBytes(const onnx::TensorProto &t, llvm::StringRef key, int64_t fallback) {
  std::string text = externalField(t, key);
  int64_t value;
  if (text.empty())
    return fallback;
  if (llvm::StringRef(text).getAsInteger(10, value) || value < 0 || value >= (int64_t(1) << 62))
    return -1;
  return value;
}
} // namespace

LogicalResult Importer::load() {
  google::protobuf::SetLogHandler(nullptr);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return emitError(UnknownLoc::get(&ctx))
           << "cannot open '" << path << "': " << std::strerror(errno);
  google::protobuf::io::IstreamInputStream zin(&in);
  google::protobuf::io::CodedInputStream coded(&zin);
  coded.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return emitError(UnknownLoc::get(&ctx))
           << "'" << path
           << "' is not a valid ONNX model: the protobuf data is truncated or corrupt";
  if (!model.has_graph() || model.ir_version() <= 0)
    return emitError(UnknownLoc::get(&ctx))
           << "'" << path << "' is not an ONNX model: it has no "
           << (model.has_graph() ? "IR version" : "graph");
  for (const auto &op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx")
      opset = op.version();
  if (opset == 0)
    return emitError(UnknownLoc::get(&ctx))
           << "'" << path << "' declares no opset for the default ONNX domain";
  if (opset < kMinOnnxOpset || opset > kMaxOnnxOpset)
    return emitError(UnknownLoc::get(&ctx))
           << "'" << path << "': unsupported opset " << opset << " (colo reads opsets "
           << kMinOnnxOpset << " to " << kMaxOnnxOpset << ")";
  dir = llvm::sys::path::parent_path(path).str();
  return success();
}

/// Decides, before anything is imported, which initializers are trainable
/// parameters. A float initializer that meets activations (values computed
/// from graph inputs) is a parameter, except batch-norm running statistics,
/// which are non-trainable state. One that is first combined arithmetically
/// with other constants (Llama's inv_freq with the positions) is a buffer
/// that the importer folds into the constants it produces, unless rows of it
/// were looked up first (T5's relative position bias, gathered by constant
/// buckets and added to a constant mask): a table is a parameter. Where the
/// dynamo exporter kept torch.export's graph signature, its parameters are
/// parameters.
LogicalResult Importer::classifyInitializers() {
  enum class Kind { Runtime, Init, Const };
  struct Info {
    Kind kind = Kind::Const;
    bool scalar = false;
    bool lookedUp = false; // rows of an initializer gathered
    llvm::SmallVector<llvm::StringRef, 2> inits;
  };
  llvm::StringMap<Info> info;
  for (const auto &t : model.graph().initializer())
    if (!info.try_emplace(t.name(), Info{Kind::Init, false, false, {t.name()}}).second)
      return emitError(UnknownLoc::get(&ctx))
             << path << ": initializer '" << printable(t.name()) << "' is defined twice";
  for (const auto &in : model.graph().input())
    if (!initializers.count(in.name()))
      info[in.name()] = {Kind::Runtime, false, false, {}};

  // torch.export's graph signature, which the dynamo exporter keeps in the
  // values' metadata: which initializers are parameters, and which constants
  // its optimizer folded from which values. Where it is there, only
  // parameters train: a folded constant (a causal mask, a scale) stays one.
  llvm::StringMap<std::string> kindOf, foldedFrom;
  auto readMetadata = [&](const std::string &name, const auto &props) {
    for (const auto &p : props) {
      if (p.key() == "pkg.torch.export.graph_signature.InputSpec.kind")
        kindOf[name] = p.value();
      else if (p.key() == "pkg.onnxscript.optimizer.folded_from")
        foldedFrom[name] = p.value();
    }
  };
  for (const auto &v : model.graph().value_info())
    readMetadata(v.name(), v.metadata_props());
  for (const auto &v : model.graph().input())
    readMetadata(v.name(), v.metadata_props());
  for (const auto &t : model.graph().initializer())
    readMetadata(t.name(), t.metadata_props());
  bool hasSignature = !kindOf.empty();
  // The dynamo exporter's optimizer (torch.onnx.export's default optimize=True)
  // merges initializers with equal values into one, which at initialization
  // is every norm scale, every bias and more, and folds parameters read at
  // constant indices (GPT-2's position table) into constants: no trace of
  // them is left to train. Its marks are the folded values' sources.
  if (!foldedFrom.empty())
    emitWarning(UnknownLoc::get(&ctx))
        << path << ": optimized by the dynamo exporter, whose optimizer merges "
        << "initializers with equal values and folds constant expressions: parameters "
        << "that start equal (norm scales, biases) become one, and parameters read at "
        << "constant indices become constants, and neither trains as in PyTorch. Export "
        << "with torch.onnx.export(..., dynamo=True, optimize=False) to keep every parameter";
  for (const auto &[name, from] : foldedFrom) {
    // "['model.lm_head.weight']": one parameter, transposed.
    StringRef source = StringRef(from).trim("[]'\" ");
    const onnx::TensorProto *t = initializers.lookup(name);
    const onnx::TensorProto *p = initializers.lookup(source);
    if (!t || !p || source.contains(',') || kindOf.lookup(source) != "PARAMETER" ||
        t->dims_size() != 2 || p->dims_size() != 2 || t->dims(0) != p->dims(1) ||
        t->dims(1) != p->dims(0) || t->data_type() != p->data_type())
      continue;
    transposeOf[name] = source.str();
  }

  // The float initializers of rank >= 1 behind `name` that may train.
  auto makeParams = [&](const std::string &name) {
    for (llvm::StringRef init : info.lookup(name).inits)
      if (!stateBuffers.contains(init) && !transposeOf.count(init) &&
          isFloatDType(initializers.lookup(init)->data_type()) &&
          initializers.lookup(init)->dims_size() > 0 &&
          (!hasSignature || kindOf.lookup(init) == "PARAMETER"))
        params.insert(init);
  };
  for (const auto &node : model.graph().node()) {
    bool anyRuntime = false, anyInit = false, anyConst = false, anyLookedUp = false;
    for (const std::string &name : node.input()) {
      auto it = info.find(name);
      if (name.empty() || it == info.end())
        continue;
      anyRuntime |= it->second.kind == Kind::Runtime;
      anyInit |= it->second.kind == Kind::Init;
      anyConst |= it->second.kind == Kind::Const && !it->second.scalar;
      anyLookedUp |= it->second.kind == Kind::Init && it->second.lookedUp;
    }
    if (node.op_type() == "BatchNormalization")
      for (int i = 3; i < std::min(node.input_size(), 5); ++i)
        for (llvm::StringRef init : info[node.input(i)].inits)
          stateBuffers.insert(init);
    Info out;
    bool combined = anyConst && !passesThrough(node.op_type());
    if (anyRuntime || (combined && anyLookedUp)) {
      out.kind = Kind::Runtime;
      for (const std::string &name : node.input())
        makeParams(name);
    } else if (anyInit && !combined) {
      out.kind = Kind::Init;
      for (const std::string &name : node.input()) {
        llvm::append_range(out.inits, info.lookup(name).inits);
        out.lookedUp |= info.lookup(name).lookedUp;
      }
      out.lookedUp |= node.op_type() == "Gather" && node.input_size() > 0 &&
                      info.lookup(node.input(0)).kind == Kind::Init;
    }
    if (node.op_type() == "Constant")
      for (const auto &a : node.attribute())
        out.scalar |= a.name() != "value" || a.t().dims_size() == 0 ||
                      (a.t().dims_size() == 1 && a.t().dims(0) == 1);
    if (node.op_type() == "Cast" || node.op_type() == "Identity")
      out.scalar = info.lookup(node.input(0)).scalar;
    for (const std::string &name : node.output())
      info[name] = out;
  }
  if (hasSignature)
    for (const auto &t : model.graph().initializer())
      if (kindOf.lookup(t.name()) == "PARAMETER")
        makeParams(t.name());
  return success();
}

FailureOr<HostTensor> Importer::hostTensorOf(const onnx::TensorProto &t) {
  if (!isSupportedDType(t.data_type()))
    return fail("initializer '" + t.name() + "' has unsupported data type " +
                dtypeName(t.data_type()));
  HostTensor h{t.data_type(), {}, {}};
  for (int64_t d : t.dims()) {
    if (d < 0 || d > (int64_t{1} << 40))
      return fail("initializer '" + t.name() + "' has invalid dimension " +
                  std::to_string(d));
    h.shape.push_back(d);
  }
  int64_t n = h.numel();
  if (n > kMaxHostElements)
    return fail("initializer '" + t.name() + "' is too large to fold at import (" +
                std::to_string(n) + " elements)");
  std::string bytes;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    FailureOr<std::string> located = externalDataFile(t);
    if (failed(located))
      return failure();
    const std::string &file = *located;
    std::ifstream in(file, std::ios::binary);
    if (!in)
      return fail("external data file '" + file + "' of '" + t.name() +
                  "' cannot be opened");
    uint64_t size = 0;
    int64_t offset = externalBytes(t, "offset", 0);
    if (offset < 0)
      return fail("external data of '" + t.name() + "' has the offset '" +
                  externalField(t, "offset") + "' (not a byte count)");
    if (llvm::sys::fs::file_size(file, size) ||
        static_cast<uint64_t>(offset + n * elementBytes(t.data_type())) > size)
      return fail("external data file '" + file + "' is too short for '" +
                  t.name() + "'");
    in.seekg(offset);
    bytes.resize(n * elementBytes(t.data_type()));
    if (!in.read(bytes.data(), bytes.size()))
      return fail("external data file '" + file + "' is too short for '" +
                  t.name() + "'");
  } else if (t.has_raw_data()) {
    bytes = t.raw_data();
  }
  Type et = elementTypeOf(&ctx, t.data_type());
  if (!bytes.empty() || n == 0) {
    if (static_cast<int64_t>(bytes.size()) != n * elementBytes(t.data_type()))
      return fail("initializer '" + t.name() + "' holds " +
                  std::to_string(bytes.size()) + " bytes, its shape needs " +
                  std::to_string(n * elementBytes(t.data_type())));
    const char *p = bytes.data();
    for (int64_t i = 0; i < n; ++i, p += elementBytes(t.data_type())) {
      switch (t.data_type()) {
      case kFloat: { float v; std::memcpy(&v, p, 4); h.values.push_back(v); break; }
      case kDouble: { double v; std::memcpy(&v, p, 8); h.values.push_back(v); break; }
      case kInt64: { int64_t v; std::memcpy(&v, p, 8); h.values.push_back(v); break; }
      case kInt32: { int32_t v; std::memcpy(&v, p, 4); h.values.push_back(v); break; }
      case kInt16: { int16_t v; std::memcpy(&v, p, 2); h.values.push_back(v); break; }
      case kInt8: h.values.push_back(static_cast<int8_t>(*p)); break;
      case kUInt8: case kBool: h.values.push_back(static_cast<uint8_t>(*p)); break;
      default: {
        uint16_t bits;
        std::memcpy(&bits, p, 2);
        APFloat f(cast<FloatType>(et).getFloatSemantics(), APInt(16, bits));
        h.values.push_back(f.convertToDouble());
      }
      }
    }
    return h;
  }
  auto take = [&](const auto &field) {
    for (auto v : field)
      h.values.push_back(static_cast<double>(v));
  };
  switch (t.data_type()) {
  case kFloat: take(t.float_data()); break;
  case kDouble: take(t.double_data()); break;
  case kInt64: take(t.int64_data()); break;
  case kFloat16: case kBFloat16:
    for (int32_t bits : t.int32_data())
      h.values.push_back(APFloat(cast<FloatType>(et).getFloatSemantics(),
                                 APInt(16, static_cast<uint16_t>(bits)))
                             .convertToDouble());
    break;
  default: take(t.int32_data());
  }
  if (static_cast<int64_t>(h.values.size()) != n)
    return fail("initializer '" + t.name() + "' holds " +
                std::to_string(h.values.size()) + " values, its shape needs " +
                std::to_string(n));
  return h;
}

FailureOr<std::string> Importer::externalDataFile(const onnx::TensorProto &t) {
  std::string location = externalField(t, "location");
  auto leaves = [&](llvm::StringRef how) {
    return fail("external data location '" + location + "' of '" + t.name() +
                "' leaves the model's directory (" + how.str() + ")");
  };
  if (location.empty())
    return fail("external data of '" + t.name() + "' has no location");
  namespace path = llvm::sys::path;
  if (path::is_absolute(location) || path::has_root_name(location))
    return leaves("an absolute path");
  for (llvm::StringRef part : llvm::make_range(path::begin(location), path::end(location)))
    if (part == "..")
      return leaves("through '..'");
  llvm::SmallString<256> file(dir);
  path::append(file, location);
  llvm::sys::fs::make_absolute(file);
  // A file that does not exist is reported by the caller; one that does
  // must resolve (through any symbolic links) to a file below the model's
  // directory, resolved the same way.
  llvm::SmallString<256> real, realDir;
  std::string inside = dir.empty() ? "." : dir;
  if (!llvm::sys::fs::real_path(file, real) && !llvm::sys::fs::real_path(inside, realDir) &&
      !llvm::StringRef(real).starts_with((realDir + path::get_separator()).str()))
    return leaves("through a symbolic link to '" + real.str().str() + "'");
  return std::string(file);
}

FailureOr<Attribute> Importer::globalInitialValue(const onnx::TensorProto &t,
                                                  RankedTensorType type) {
  int64_t bytes = type.getNumElements() * elementBytes(t.data_type());
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    FailureOr<std::string> located = externalDataFile(t);
    if (failed(located))
      return failure();
    const std::string &file = *located;
    uint64_t size = 0;
    if (llvm::sys::fs::file_size(file, size))
      return fail("external data file '" + file + "' of '" + t.name() +
                  "' is missing");
    int64_t offset = externalBytes(t, "offset", 0), length = externalBytes(t, "length", bytes);
    for (auto [key, value] : {std::pair{"offset", offset}, {"length", length}})
      if (value < 0)
        return fail("external data of '" + t.name() + "' has the " + key + " '" +
                    externalField(t, key) + "' (not a byte count)");
    if (length != bytes)
      return fail("external data of '" + t.name() + "' is " + std::to_string(length) +
                  " bytes, its shape needs " + std::to_string(bytes));
    if (static_cast<uint64_t>(offset + length) > size)
      return fail("external data file '" + file + "' is too short for '" + t.name() +
                  "' at offset " + std::to_string(offset) + ": needs " +
                  std::to_string(offset + length) + " bytes, has " + std::to_string(size));
    return Attribute(ExternalDataAttr::get(&ctx, file, offset, length));
  }
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != bytes)
      return fail("initializer '" + t.name() + "' holds " +
                  std::to_string(t.raw_data().size()) + " bytes, its shape needs " +
                  std::to_string(bytes));
    ArrayRef<char> data(t.raw_data().data(), t.raw_data().size());
    return Attribute(DenseResourceElementsAttr::get(
        type, t.name(), HeapAsmResourceBlob::allocateAndCopyInferAlign(data)));
  }
  FailureOr<HostTensor> host = hostTensorOf(t);
  if (failed(host))
    return failure();
  return Attribute(host->toAttr(&ctx));
}

FailureOr<Val> Importer::initializerValue(const onnx::TensorProto &t) {
  if (!params.contains(t.name()) && !stateBuffers.contains(t.name())) {
    FailureOr<HostTensor> host = hostTensorOf(t);
    if (failed(host))
      return failure();
    return Val{{}, std::move(*host), {}};
  }
  Type et = elementTypeOf(&ctx, t.data_type());
  if (!et)
    return fail("initializer '" + t.name() + "' has unsupported data type " +
                dtypeName(t.data_type()));
  SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
  if (llvm::any_of(shape, [](int64_t d) { return d < 0 || d > (int64_t{1} << 40); }))
    return fail("initializer '" + t.name() + "' has an invalid dimension");
  auto type = RankedTensorType::get(shape, et);
  FailureOr<Attribute> init = globalInitialValue(t, type);
  if (failed(init))
    return failure();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(func);
  Location gloc = NameLoc::get(StringAttr::get(&ctx, t.name()));
  auto global = GlobalOp::create(builder, gloc, t.name(), type, *init,
                                 params.contains(t.name()), /*shard=*/nullptr);
  builder.setInsertionPointToStart(&func.getBody().front());
  Value load = GlobalLoadOp::create(builder, gloc, type, global.getSymName());
  return Val{load, {}, {}};
}

LogicalResult Importer::importGraphInputs() {
  SmallVector<Type> types;
  std::vector<const onnx::ValueInfoProto *> inputs;
  for (const auto &in : model.graph().input())
    if (!initializers.count(in.name()))
      inputs.push_back(&in);
  if (!inputShapes.empty() && inputShapes.size() != inputs.size())
    return emitError(UnknownLoc::get(&ctx))
           << path << ": the model has " << inputs.size() << " input(s) but "
           << inputShapes.size() << " --input-shape(s) were given";
  for (auto [i, in] : llvm::enumerate(inputs)) {
    if (!in->type().has_tensor_type())
      return emitError(UnknownLoc::get(&ctx))
             << path << ": graph input '" << in->name() << "' is not a tensor";
    const auto &tt = in->type().tensor_type();
    Type et = elementTypeOf(&ctx, tt.elem_type());
    if (!et)
      return emitError(UnknownLoc::get(&ctx))
             << path << ": graph input '" << in->name()
             << "' has unsupported data type " << dtypeName(tt.elem_type());
    SmallVector<int64_t> shape;
    if (!inputShapes.empty()) {
      // A given shape fixes dynamic dimensions; static ones must agree.
      FailureOr<InputShape> given = parseInputShape(inputShapes[i], ctx);
      if (failed(given))
        return failure();
      if (given->elementType && given->elementType != et)
        return emitError(UnknownLoc::get(&ctx))
               << path << ": input '" << in->name() << "' is " << et << ", not "
               << given->elementType;
      if (static_cast<int>(given->dims.size()) != tt.shape().dim_size())
        return emitError(UnknownLoc::get(&ctx))
               << path << ": input '" << in->name() << "' has rank "
               << tt.shape().dim_size() << ", the given shape '" << inputShapes[i]
               << "' has rank " << given->dims.size();
      for (auto [d, v] : llvm::zip(tt.shape().dim(), given->dims))
        if (d.has_dim_value() && d.dim_value() != v)
          return emitError(UnknownLoc::get(&ctx))
                 << path << ": input '" << in->name() << "' has static dimension "
                 << d.dim_value() << " where the given shape says " << v;
      shape = given->dims;
    } else {
      for (const auto &d : tt.shape().dim()) {
        if (d.has_dim_value() && d.dim_value() < 0)
          return emitError(UnknownLoc::get(&ctx))
                 << path << ": graph input '" << in->name() << "' has dimension "
                 << d.dim_value() << " (dimensions are >= 0)";
        if (!d.has_dim_value())
          return emitError(UnknownLoc::get(&ctx))
                 << path << ": graph input '" << in->name() << "' has a dynamic dimension"
                 << (d.has_dim_param() ? " '" + d.dim_param() + "'" : std::string())
                 << "; colo compiles static shapes: pass --input-shape (e.g. "
                    "--input-shape 2x16) or export with fixed input sizes";
        shape.push_back(d.dim_value());
      }
    }
    int64_t elements = 1;
    for (int64_t d : shape) { // 2^48 elements: far past any real input
      if (d != 0 && elements > (int64_t(1) << 48) / d)
        return emitError(UnknownLoc::get(&ctx))
               << path << ": graph input '" << in->name()
               << "' has more than 2^48 elements (an overflowing shape?)";
      elements *= d;
    }
    types.push_back(RankedTensorType::get(shape, et));
  }
  builder.setInsertionPointToEnd(module.getBody());
  func = func::FuncOp::create(builder, module.getLoc(), "forward",
                              builder.getFunctionType(types, {}));
  Block *entry = func.addEntryBlock();
  size_t i = 0;
  for (const auto &in : model.graph().input())
    if (!initializers.count(in.name())) {
      // Inputs keep the graph's names: data files and runtimes refer to them.
      BlockArgument arg = entry->getArgument(i++);
      arg.setLoc(NameLoc::get(builder.getStringAttr(in.name())));
      values[in.name()] = Val{arg, {}, {}};
    }
  builder.setInsertionPointToEnd(entry);
  return success();
}

Location Importer::nodeLocation(const onnx::NodeProto &node, size_t index) {
  std::string name = node.name().empty()
                         ? node.op_type() + "_" + std::to_string(index)
                         : node.name();
  // The dynamo exporter keeps the module path in metadata, not in the name:
  // ": Root/model: Cls/model.h.0: Block/linear: aten.linear" -> "model.h.0".
  for (const auto &kv : node.metadata_props()) {
    if (kv.key() != "namespace")
      continue;
    llvm::SmallVector<llvm::StringRef> scopes;
    llvm::StringRef(kv.value()).split(scopes, '/');
    if (scopes.size() >= 2) {
      llvm::StringRef module = scopes[scopes.size() - 2].split(':').first.trim();
      if (!module.empty())
        name = (module + "/" + name).str();
    }
  }
  return NameLoc::get(StringAttr::get(&ctx, name));
}

LogicalResult Importer::lookupInputs(const onnx::NodeProto &node,
                                     SmallVectorImpl<Val *> &ins) {
  for (const std::string &name : node.input()) {
    if (name.empty()) {
      ins.push_back(nullptr);
      continue;
    }
    FailureOr<Val *> v = initializerOrValue(name);
    if (failed(v))
      return failure();
    ins.push_back(*v);
  }
  return success();
}

FailureOr<Val *> Importer::initializerOrValue(const std::string &name) {
  auto it = values.find(name);
  if (it != values.end())
    return &it->second;
  auto init = initializers.find(name);
  if (init == initializers.end())
    return fail("input '" + name + "' is not defined by any earlier node, "
                "initializer or graph input");
  FailureOr<Val> v = failure();
  if (auto tied = transposeOf.find(name); tied != transposeOf.end()) {
    FailureOr<Val *> param = initializerOrValue(tied->second);
    if (failed(param))
      return failure();
    Value load = use(**param);
    auto t = create<TransposeOp>(load, builder.getDenseI64ArrayAttr({1, 0}));
    if (failed(t))
      return failure();
    v = Val{t->getResult(), {}, {}};
  } else {
    v = initializerValue(*init->second);
  }
  if (failed(v))
    return failure();
  return &values.insert({name, std::move(*v)}).first->second;
}

NodeAttrs Importer::attrs(const onnx::NodeProto &node) {
  // The attribute `name` if the node has it. One of another type (perm as a
  // float) is an error, not a default: the node would mean something else.
  using Type = onnx::AttributeProto;
  auto find = [&node, this](llvm::StringRef name,
                            Type::AttributeType type) -> const onnx::AttributeProto * {
    for (const auto &a : node.attribute()) {
      if (a.name() != name)
        continue;
      // UNDEFINED: models older than IR version 2 did not say.
      if (a.type() != type && a.type() != Type::UNDEFINED) {
        if (attributeError.empty())
          attributeError = "attribute '" + printable(a.name()) + "' is " +
                           Type::AttributeType_Name(a.type()) + ", not " +
                           Type::AttributeType_Name(type);
        return nullptr;
      }
      return &a;
    }
    return nullptr;
  };
  NodeAttrs a;
  a.opset = opset;
  a.getInt = [find](llvm::StringRef n) -> std::optional<int64_t> {
    if (const auto *p = find(n, Type::INT))
      return p->i();
    return std::nullopt;
  };
  a.getFloat = [find](llvm::StringRef n) -> std::optional<double> {
    if (const auto *p = find(n, Type::FLOAT))
      return p->f();
    return std::nullopt;
  };
  a.getInts = [find](llvm::StringRef n) -> std::optional<std::vector<int64_t>> {
    if (const auto *p = find(n, Type::INTS))
      return std::vector<int64_t>(p->ints().begin(), p->ints().end());
    return std::nullopt;
  };
  a.getString = [find](llvm::StringRef n) -> std::optional<std::string> {
    if (const auto *p = find(n, Type::STRING))
      return p->s();
    return std::nullopt;
  };
  a.getTensor = [find, this](llvm::StringRef n) -> std::optional<HostTensor> {
    if (const auto *p = find(n, Type::TENSOR)) {
      FailureOr<HostTensor> t = hostTensorOf(p->t());
      if (succeeded(t))
        return *t;
    }
    return std::nullopt;
  };
  return a;
}

Value Importer::use(Val &v) {
  if (!v.value && v.host) {
    OpBuilder::InsertionGuard guard(builder);
    v.value = ConstantOp::create(builder, loc, v.host->toAttr(&ctx));
  }
  return v.value;
}

FailureOr<std::vector<int64_t>> Importer::constInts(Val *v, llvm::StringRef what) {
  if (!v || !v->host)
    return fail(what + " must be a constant known at import time; colo needs "
                       "static shapes");
  return v->host->asInts();
}

LogicalResult Importer::importNode(const onnx::NodeProto &node, size_t index) {
  const std::string &op = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return fail("unsupported op from domain '" + node.domain() + "'");

  SmallVector<Val *> ins;
  if (failed(lookupInputs(node, ins)))
    return failure();
  int required = requiredInputs(op, opset);
  if (static_cast<int>(ins.size()) < required)
    return fail("expected at least " + std::to_string(required) + " inputs, got " +
                std::to_string(ins.size()));
  for (int i = 0; i < required; ++i)
    if (!ins[size_t(i)])
      return fail("required input " + std::to_string(i) + " is missing (an empty name)");
  SmallVector<Val> outs;
  NodeAttrs a = attrs(node);

  if (op == "Constant") {
    std::optional<HostTensor> t = a.getTensor("value");
    if (!t) {
      if (auto f = a.getFloat("value_float"))
        t = HostTensor::scalar(*f, kFloat);
      else if (auto i = a.getInt("value_int"))
        t = HostTensor::scalar(*i, kInt64);
      else if (auto is = a.getInts("value_ints"))
        t = HostTensor::vector(*is);
      for (const auto &attr : node.attribute())
        if (!t && attr.name() == "value_floats") {
          t = HostTensor{kFloat, {attr.floats_size()}, {}};
          for (float f : attr.floats())
            t->values.push_back(f);
        }
      if (!t)
        return fail(nodeError.empty() ? "unsupported Constant attribute" : nodeError);
    }
    outs.push_back(Val{{}, std::move(*t), {}});
  } else if (op == "Shape" || op == "Size") {
    SmallVector<int64_t> shape =
        ins[0]->value
            ? SmallVector<int64_t>(cast<RankedTensorType>(ins[0]->value.getType()).getShape())
            : ins[0]->host->shape;
    if (op == "Size") {
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      outs.push_back(Val{{}, HostTensor::scalar(n, kInt64), {}});
    } else {
      int64_t rank = shape.size();
      int64_t start = a.getInt("start").value_or(0), end = a.getInt("end").value_or(rank);
      start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
      end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
      std::vector<int64_t> dims(shape.begin() + start, shape.begin() + std::max(start, end));
      outs.push_back(Val{{}, HostTensor::vector(dims), {}});
    }
  } else if (op == "CastLike" && ins[0]->host && ins[1]->value) {
    // Only the element type of the second input matters.
    Type et = cast<RankedTensorType>(ins[1]->value.getType()).getElementType();
    HostTensor t = *ins[0]->host;
    t.dtype = dtypeOf(et);
    for (double &v : t.values)
      v = HostTensor::convert(v, t.dtype);
    outs.push_back(Val{{}, std::move(t), {}});
  } else {
    bool allHost = llvm::any_of(ins, [](Val *v) { return v; }) &&
                   llvm::all_of(ins, [](Val *v) { return !v || v->host; });
    bool folded = false;
    if (allHost && op != "Dropout") {
      SmallVector<const HostTensor *> hostIns;
      for (Val *v : ins)
        hostIns.push_back(v ? &*v->host : nullptr);
      EvalResult r = evaluate(op, hostIns, a);
      if (r.kind == EvalResult::Error)
        return fail(r.error);
      if (r.kind == EvalResult::Folded) {
        for (HostTensor &t : r.outputs)
          outs.push_back(Val{{}, std::move(t), {}});
        folded = true;
      }
    }
    if (!folded) {
      auto it = handlers().find(op);
      if (it == handlers().end())
        return fail("unsupported op");
      if (failed((this->*(it->second))(node, ins, outs)))
        return failure();
    }
  }
  for (auto [i, name] : llvm::enumerate(node.output())) {
    if (name.empty() || i >= outs.size())
      continue;
    // ONNX graphs are in SSA form: a second definition would silently win.
    if (values.count(name) || initializers.count(name))
      return fail("output '" + name + "' is defined twice (already an input, an "
                  "initializer or another node's output)");
    values[name] = std::move(outs[i]);
  }
  return success();
}

FailureOr<OwningOpRef<ModuleOp>> Importer::run() {
  ctx.loadDialect<ColoDialect, func::FuncDialect>();
  if (failed(load()))
    return failure();
  for (const auto &t : model.graph().initializer())
    initializers[t.name()] = &t;
  module = ModuleOp::create(FileLineColLoc::get(&ctx, path, 0, 0));
  OwningOpRef<ModuleOp> owned(module);
  ColoDialect::SourceAttrHelper(&ctx).setAttr(module, builder.getStringAttr("onnx"));
  ColoDialect::ProducerAttrHelper(&ctx).setAttr(
      module, builder.getStringAttr(model.producer_name() + " " + model.producer_version()));
  ColoDialect::OpsetAttrHelper(&ctx).setAttr(module, builder.getI64IntegerAttr(opset));
  if (failed(classifyInitializers()) || failed(importGraphInputs()))
    return failure();

  for (auto it : llvm::enumerate(model.graph().node())) {
    // Named, not bound: a lambda may not capture a binding before C++20.
    size_t index = it.index();
    const onnx::NodeProto &node = it.value();
    loc = nodeLocation(node, index);
    attributeError.clear();
    std::optional<std::string> problem = capture([&] { return importNode(node, index); });
    // An attribute of the wrong type is the cause of whatever it led to.
    if (!attributeError.empty())
      problem = attributeError;
    if (problem) {
      std::string name = node.name().empty() ? "#" + std::to_string(index) : node.name();
      return emitError(loc) << path << ": node '" << printable(name) << "' ("
                            << printable(node.op_type()) << "): " << printable(*problem);
    }
  }

  SmallVector<Value> results;
  for (const auto &out : model.graph().output()) {
    auto it = values.find(out.name());
    if (it == values.end() || it->second.sequence)
      return emitError(UnknownLoc::get(&ctx))
             << path << ": graph output '" << out.name() << "' is not a tensor "
             << "produced by the graph";
    loc = NameLoc::get(StringAttr::get(&ctx, out.name()));
    results.push_back(use(it->second));
  }
  func::ReturnOp::create(builder, func.getLoc(), results);
  func.setType(builder.getFunctionType(func.getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  if (failed(verify(module)))
    return failure();
  return owned;
}

} // namespace colo::onnx_import

FailureOr<OwningOpRef<ModuleOp>>
colo::importOnnxFile(llvm::StringRef path, MLIRContext &context,
                     llvm::ArrayRef<std::string> inputShapes) {
  return onnx_import::Importer(context, path, inputShapes).run();
}
