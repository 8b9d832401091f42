// colo-eval: imports a model (as `colo import` does) and evaluates its
// @forward with the reference interpreter on inputs read from .npy files.
//
//   colo-eval model.onnx --input x.npy -o y.npy
//   colo-eval model.pt --input ids.npy --input-shape 2x16xi64 -o logits.npy
//
// Float results are written as float64, integer and boolean ones as int64.
// A model with several results writes result i > 0 next to the first, named
// `<out stem>.<i>.npy`. Errors: one line "colo: error: ..." and exit code 1.
#include "colo/Driver/Driver.h"
#include "colo/Interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace llvm;

namespace {
// --help shows these, not the options of the LLVM libraries linked in.
cl::OptionCategory evalOptions("colo-eval options");
cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.onnx|model.pt|model.mlir>"),
                               cl::Required, cl::cat(evalOptions));
cl::list<std::string> inputPaths("input", cl::desc("An input as .npy (float32, float64, "
                                                   "int64, int32 or bool), one per model "
                                                   "input in order"),
                                 cl::value_desc("file.npy"), cl::cat(evalOptions));
cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Shape of an input of a TorchScript model, e.g. 2x16xi64 (default: "
             "taken from the --input arrays)"),
    cl::value_desc("shape"), cl::cat(evalOptions));
cl::opt<std::string> outputPath("o",
                                cl::desc("Write the first result to this .npy file (the "
                                         "others to FILE.1.npy, FILE.2.npy, ...)"),
                                cl::value_desc("file.npy"), cl::Required, cl::cat(evalOptions));

int reportError(const Twine &msg) {
  WithColor::error(errs(), "colo") << msg << "\n";
  return 1;
}

enum class NpyType { f32, f64, i64, i32, b1 };

struct Npy {
  colo::HostArray array;
  NpyType type;
};

/// Reads a .npy file (format versions 1-3): little-endian float32, float64 or
/// int64 in C order.
Expected<Npy> readNpy(StringRef path) {
  auto fail = [&](const Twine &msg) {
    return createStringError(inconvertibleErrorCode(), "'" + path + "': " + msg);
  };
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buf)
    return fail(buf.getError().message());
  StringRef bytes = (*buf)->getBuffer();
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    return fail("not a .npy file (no \\x93NUMPY magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, start;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) |
                static_cast<unsigned char>(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return fail("truncated header");
    headerLen = 0;
    for (int i = 3; i >= 0; --i)
      headerLen = headerLen << 8 | static_cast<unsigned char>(bytes[8 + i]);
    start = 12;
  } else {
    return fail("unsupported .npy format version " + Twine(major));
  }
  if (start + headerLen > bytes.size())
    return fail("truncated header");
  StringRef header = bytes.substr(start, headerLen);
  // The header is a Python dict literal: {'descr': '<f4', 'fortran_order':
  // False, 'shape': (2, 3), }
  auto field = [&](StringRef key) -> std::optional<StringRef> {
    size_t at = header.find(("'" + key + "'").str());
    if (at == StringRef::npos)
      return std::nullopt;
    StringRef rest = header.drop_front(at + key.size() + 2).ltrim();
    if (!rest.consume_front(":"))
      return std::nullopt;
    return rest.ltrim();
  };
  std::optional<StringRef> descr = field("descr"), fortran = field("fortran_order"),
                           shapeField = field("shape");
  if (!descr || !fortran || !shapeField)
    return fail("malformed header '" + header.trim() + "'");
  StringRef d = descr->drop_front(1).take_until([](char c) { return c == '\'' || c == '"'; });
  NpyType type;
  size_t width;
  if (d == "<f4") {
    type = NpyType::f32, width = 4;
  } else if (d == "<f8") {
    type = NpyType::f64, width = 8;
  } else if (d == "<i8") {
    type = NpyType::i64, width = 8;
  } else if (d == "<i4") {
    type = NpyType::i32, width = 4;
  } else if (d == "|b1") {
    type = NpyType::b1, width = 1;
  } else {
    return fail("unsupported dtype '" + d +
                "' (expected little-endian float32, float64, int64, int32 or bool: <f4, "
                "<f8, <i8, <i4, |b1)");
  }
  if (!fortran->starts_with("False"))
    return fail("Fortran-order arrays are not supported (save a C-order array)");
  if (!shapeField->starts_with("("))
    return fail("malformed shape in header '" + header.trim() + "'");
  StringRef dims = shapeField->drop_front(1).take_until([](char c) { return c == ')'; });
  Npy npy;
  npy.type = type;
  SmallVector<StringRef> parts;
  dims.split(parts, ',');
  for (StringRef p : parts) {
    p = p.trim();
    if (p.empty())
      continue;
    int64_t v;
    if (p.getAsInteger(10, v) || v < 0)
      return fail("malformed shape '(" + dims + ")'");
    npy.array.shape.push_back(v);
  }
  size_t n = 1;
  for (int64_t v : npy.array.shape)
    n *= v;
  StringRef data = bytes.drop_front(start + headerLen);
  if (data.size() != n * width)
    return fail("holds " + Twine(data.size()) + " data bytes, its shape needs " +
                Twine(n * width));
  npy.array.data.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const char *p = data.data() + i * width;
    if (type == NpyType::f32) {
      float f;
      std::memcpy(&f, p, 4);
      npy.array.data[i] = f;
    } else if (type == NpyType::f64) {
      std::memcpy(&npy.array.data[i], p, 8);
    } else if (type == NpyType::i32) {
      int32_t v;
      std::memcpy(&v, p, 4);
      npy.array.data[i] = static_cast<double>(v);
    } else if (type == NpyType::b1) {
      npy.array.data[i] = *p ? 1.0 : 0.0;
    } else {
      int64_t v;
      std::memcpy(&v, p, 8);
      npy.array.data[i] = static_cast<double>(v);
    }
  }
  return npy;
}

/// Writes a version 1.0 .npy file of float64 or int64.
Error writeNpy(StringRef path, const colo::HostArray &a, bool asInt) {
  std::string shape = "(";
  for (int64_t d : a.shape)
    shape += std::to_string(d) + ", ";
  if (a.shape.size() > 1)
    shape.resize(shape.size() - 2);
  else if (a.shape.size() == 1)
    shape.resize(shape.size() - 1); // "(n,)"
  shape += ")";
  std::string header = std::string("{'descr': '") + (asInt ? "<i8" : "<f8") +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded to 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_None);
  if (ec)
    return createStringError(ec, "cannot write '" + path + "': " + ec.message());
  os << "\x93NUMPY" << '\x01' << '\x00';
  os << static_cast<char>(header.size() & 0xff) << static_cast<char>(header.size() >> 8);
  os << header;
  for (double v : a.data) {
    char bytes[8];
    if (asInt) {
      int64_t i = static_cast<int64_t>(v);
      std::memcpy(bytes, &i, 8);
    } else {
      std::memcpy(bytes, &v, 8);
    }
    os.write(bytes, 8);
  }
  os.close();
  if (os.has_error())
    return createStringError(os.error(), "cannot write '" + path + "'");
  return Error::success();
}

std::string shapeSpec(const Npy &npy) {
  std::string s;
  for (int64_t d : npy.array.shape)
    s += std::to_string(d) + "x";
  switch (npy.type) {
  case NpyType::i64:
    return s + "i64";
  case NpyType::i32:
    return s + "i32";
  case NpyType::b1:
    return s + "i1";
  default:
    return s + "f32";
  }
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(evalOptions);
  cl::ParseCommandLineOptions(
      argc, argv,
      "colo-eval: import a model and evaluate it with colo's reference interpreter\n");

  std::vector<Npy> inputs;
  for (const std::string &path : inputPaths) {
    Expected<Npy> npy = readNpy(path);
    if (!npy)
      return reportError(toString(npy.takeError()));
    inputs.push_back(std::move(*npy));
  }

  mlir::MLIRContext ctx;
  bool reported = false;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error && !reported) {
      reportError(d.str());
      reported = true;
    }
    return mlir::success();
  });

  colo::ImportOptions options;
  options.inputShapes.assign(inputShapes.begin(), inputShapes.end());
  if (options.inputShapes.empty() && sys::path::extension(modelPath) == ".pt")
    for (const Npy &npy : inputs)
      options.inputShapes.push_back(shapeSpec(npy));
  auto module = colo::importModel(modelPath, ctx, options);
  if (failed(module)) {
    if (!reported)
      reportError("import of '" + modelPath + "' failed");
    return 1;
  }

  std::vector<colo::HostArray> arrays;
  for (Npy &npy : inputs)
    arrays.push_back(std::move(npy.array));
  auto results = colo::interpret(**module, arrays);
  if (failed(results)) {
    if (!reported)
      reportError("evaluation of '" + modelPath + "' failed");
    return 1;
  }

  auto forward = (*module)->lookupSymbol<mlir::func::FuncOp>("forward");
  ArrayRef<mlir::Type> resultTypes = forward.getFunctionType().getResults();
  for (auto [i, result] : llvm::enumerate(*results)) {
    SmallString<256> path(outputPath);
    if (i > 0) {
      sys::path::replace_extension(path, "");
      path += "." + std::to_string(i) + ".npy";
    }
    bool asInt = isa<mlir::IntegerType>(mlir::getElementTypeOrSelf(resultTypes[i]));
    if (Error e = writeNpy(path, result, asInt))
      return reportError(toString(std::move(e)));
  }
  return 0;
}
