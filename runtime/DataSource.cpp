//===- DataSource.cpp - Filling a program's inputs step by step -----------===//

#include "colo/Runtime/DataSource.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/ExternalData.h"
#include "colo/Runtime/Files.h"
#include "Npy.h"

#include <cmath>
#include <cstring>
#include <sys/stat.h>

namespace colo::runtime {

InputSink::~InputSink() = default;
DataSource::~DataSource() = default;

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The position after `steps` steps of `perStep` items each in a cycle of
/// `total` items, without overflow.
int64_t advanced(int64_t steps, int64_t perStep, int64_t total) {
  return int64_t((__int128(steps) * perStep) % total);
}

bool isAttentionMask(const Buffer &b) { return b.name() == "attention_mask"; }

IntBound intBound(const Buffer &b) {
  IntBound bound{b.int_max(), std::nullopt};
  if (b.has_int_ignored())
    bound.ignored = b.int_ignored();
  return bound;
}

void fillOnes(void *dst, DType dtype, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    char *p = static_cast<char *>(dst) + i * dtypeSize(dtype);
    switch (dtype) {
    case I64: {
      int64_t v = 1;
      std::memcpy(p, &v, 8);
      break;
    }
    case I32: {
      int32_t v = 1;
      std::memcpy(p, &v, 4);
      break;
    }
    case F32: {
      float v = 1;
      std::memcpy(p, &v, 4);
      break;
    }
    case F64: {
      double v = 1;
      std::memcpy(p, &v, 8);
      break;
    }
    case F16: {
      uint16_t v = 0x3c00;
      std::memcpy(p, &v, 2);
      break;
    }
    case BF16: {
      uint16_t v = 0x3f80;
      std::memcpy(p, &v, 2);
      break;
    }
    default:
      *p = 1;
      break;
    }
  }
}

//===----------------------------------------------------------------------===//
// .npy / .npz
//===----------------------------------------------------------------------===//

class ArraySource : public DataSource {
public:
  struct Feed {
    int32_t id;
    std::string what; // "data.npz: array 'x'", for errors
    NpyArray array;
    DType dtype;
    int64_t rowElements;
    IntBound bound;
  };

  ArraySource(std::string path, std::vector<Feed> feeds, int64_t samples, int64_t rows,
              int64_t parts, int64_t part)
      : path(std::move(path)), feeds(std::move(feeds)), samples(samples), rows(rows),
        parts(parts), part(part) {}

  void next(InputSink &inputs) override {
    for (Feed &f : feeds) {
      char *dst = static_cast<char *>(inputs.inputStorage(f.id));
      int64_t inBytes = f.rowElements * f.array.itemSize;
      int64_t outBytes = f.rowElements * dtypeSize(f.dtype);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t row = (cursor + part * rows + r) % samples;
        convertElements(f.array.data.data() + row * inBytes, f.array.kind,
                        f.array.itemSize, f.dtype, dst + r * outBytes, f.rowElements,
                        f.what, f.bound, row * f.rowElements);
      }
    }
    cursor = (cursor + rows * parts) % samples;
  }

  void seek(int64_t steps) override { cursor = advanced(steps, rows * parts, samples); }

  std::string description() const override {
    int64_t perStep = rows * parts, perEpoch = (samples + perStep - 1) / perStep;
    return path + ": " + std::to_string(samples) + " samples, " + std::to_string(perStep) +
           " per step (" + std::to_string(perEpoch) + " steps per epoch)";
  }

private:
  std::string path;
  std::vector<Feed> feeds;
  int64_t samples, rows, parts, part, cursor = 0;
};

std::unique_ptr<DataSource> openArrays(const std::string &path,
                                       std::map<std::string, NpyArray> arrays,
                                       const Executable &exe, bool single,
                                       int64_t part) {
  std::vector<ArraySource::Feed> feeds;
  int64_t samples = -1, rows = -1;
  std::string first;
  for (int32_t id : exe.inputs()) {
    const Buffer &b = exe.buffer(id);
    Shape shape = exe.shape(id);
    auto it = single ? arrays.begin() : arrays.find(b.name());
    if (it == arrays.end()) {
      std::string names;
      for (const auto &[name, a] : arrays)
        names += (names.empty() ? "" : ", ") + name;
      throw Error(path + ": no array '" + b.name() + "' for the program's input '" +
                  b.name() + "' (the file has: " + (names.empty() ? "none" : names) +
                  ")");
    }
    NpyArray &a = it->second;
    std::string what = single ? path : path + ": array '" + it->first + "'";
    Shape expect = shape;
    int64_t perStep;
    if (a.shape.size() == shape.size() && !shape.empty() &&
        std::equal(shape.begin() + 1, shape.end(), a.shape.begin() + 1)) {
      perStep = shape[0];
    } else if (a.shape.size() == shape.size() + 1 &&
               std::equal(shape.begin(), shape.end(), a.shape.begin() + 1)) {
      perStep = 1;
    } else {
      std::string want = "[N";
      for (size_t i = shape.empty() ? 0 : 1; i < shape.size(); ++i)
        want += ", " + std::to_string(shape[i]);
      want += "]";
      throw Error(what + " has shape " + shapeString(a.shape) + " but the input '" +
                  b.name() + "' is " + typeString(b.dtype(), shape) + ": expected " +
                  want + " (N samples first)");
    }
    if (a.shape[0] == 0)
      throw Error(what + " has no samples (shape " + shapeString(a.shape) + ")");
    if (!convertible(a.kind, a.itemSize, b.dtype()))
      throw Error(
          what + " holds " + a.typeName() + " but the input '" + b.name() + "' is " +
          dtypeName(b.dtype()) +
          (isFloat(b.dtype()) ? " (give floating-point data)" : " (give integer data)"));
    if (samples < 0) {
      samples = a.shape[0];
      rows = perStep;
      first = b.name();
    } else if (a.shape[0] != samples || perStep != rows) {
      throw Error(path + ": inputs '" + first + "' and '" + b.name() +
                  "' disagree: " + std::to_string(samples) + " vs " +
                  std::to_string(a.shape[0]) + " samples, " + std::to_string(rows) +
                  " vs " + std::to_string(perStep) + " per step");
    }
    int64_t rowElements = numElements(shape) / std::max<int64_t>(perStep, 1);
    feeds.push_back({id, what, std::move(a), b.dtype(), rowElements, intBound(b)});
  }
  if (samples < 0)
    samples = rows = 1; // the program has no inputs
  return std::make_unique<ArraySource>(path, std::move(feeds), samples, rows,
                                       exe.batchParts(), part);
}

//===----------------------------------------------------------------------===//
// Token files
//===----------------------------------------------------------------------===//

class TokenSource : public DataSource {
public:
  struct Feed {
    int32_t id;
    std::string name;
    DType dtype;
    int64_t count;
    int64_t shift;
    IntBound bound;
    bool ones;
  };

  TokenSource(std::string path, std::unique_ptr<MappedRegion> region, int itemSize,
              std::string typeName, std::vector<Feed> feeds, int64_t perRank,
              int64_t parts, int64_t part)
      : path(std::move(path)), region(std::move(region)), itemSize(itemSize),
        typeName(std::move(typeName)), feeds(std::move(feeds)), perRank(perRank),
        parts(parts), part(part), tokens(this->region->size() / itemSize) {}

  void next(InputSink &inputs) override {
    const char *base = static_cast<const char *>(region->data());
    for (const Feed &f : feeds) {
      void *dst = inputs.inputStorage(f.id);
      if (f.ones) {
        fillOnes(dst, f.dtype, f.count);
      } else {
        for (int64_t j = 0; j < f.count; ++j) {
          int64_t pos = (cursor + part * perRank + f.shift + j) % tokens;
          int64_t v;
          if (itemSize == 1) {
            v = static_cast<unsigned char>(base[pos]);
          } else if (itemSize == 2) {
            uint16_t t;
            std::memcpy(&t, base + pos * 2, 2);
            v = t;
          } else {
            int32_t t;
            std::memcpy(&t, base + pos * 4, 4);
            v = t;
          }
          // Token files hold token ids: never an ignore_index.
          if (v < 0 || (f.bound.max > 0 && v >= f.bound.max))
            throw Error(
                path + ": token " + std::to_string(v) + " at position " +
                std::to_string(pos) + " is out of range for input '" + f.name + "'" +
                (f.bound.max > 0 ? " (vocabulary " + std::to_string(f.bound.max) + ")" : ""));
          if (f.dtype == I64)
            static_cast<int64_t *>(dst)[j] = v;
          else
            static_cast<int32_t *>(dst)[j] = int32_t(v);
        }
      }
    }
    cursor = (cursor + perRank * parts) % tokens;
  }

  void seek(int64_t steps) override { cursor = advanced(steps, perRank * parts, tokens); }

  std::string description() const override {
    return path + ": " + std::to_string(tokens) + " " + typeName + " tokens, " +
           std::to_string(perRank * parts) + " per step";
  }

private:
  std::string path;
  std::unique_ptr<MappedRegion> region;
  int itemSize;
  std::string typeName;
  std::vector<Feed> feeds;
  int64_t perRank, parts, part, tokens, cursor = 0;
};

std::unique_ptr<DataSource> openTokens(const std::string &path, const Executable &exe,
                                       const DataOptions &options) {
  int itemSize;
  if (options.tokenDType == "uint8")
    itemSize = 1; // bytes: any file is a byte-level corpus
  else if (options.tokenDType == "uint16")
    itemSize = 2;
  else if (options.tokenDType == "int32")
    itemSize = 4;
  else
    throw Error("unknown token dtype '" + options.tokenDType + "' (uint8, uint16 or int32)");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw Error("cannot open data file '" + path + "': " + std::strerror(errno));
  int64_t bytes = st.st_size;
  if (bytes == 0)
    throw Error(path + ": the token file is empty");
  if (bytes % itemSize)
    throw Error(path + ": " + std::to_string(bytes) + " bytes is not a whole number of " +
                options.tokenDType + " tokens");
  auto region = std::make_unique<MappedRegion>(path, 0, bytes);
  if (!region->ok())
    throw Error(region->error());

  std::vector<TokenSource::Feed> feeds;
  int64_t perStep = -1;
  std::string first;
  for (int32_t id : exe.inputs()) {
    const Buffer &b = exe.buffer(id);
    int64_t count = exe.numElements(id);
    if (isAttentionMask(b)) {
      feeds.push_back({id, b.name(), b.dtype(), count, 0, IntBound{}, true});
      continue;
    }
    if (b.dtype() != I64 && b.dtype() != I32)
      throw Error("input '" + b.name() + "' is " + typeString(b.dtype(), exe.shape(id)) +
                  ": a token file fills only i64 or i32 inputs");
    if (perStep < 0) {
      perStep = count;
      first = b.name();
    } else if (count != perStep) {
      throw Error("inputs '" + first + "' and '" + b.name() +
                  "' take different numbers of tokens (" + std::to_string(perStep) +
                  " and " + std::to_string(count) + ")");
    }
    bool label = b.name() == "labels" || b.name() == "targets";
    feeds.push_back({id, b.name(), b.dtype(), count, options.shiftLabels && label ? 1 : 0,
                     intBound(b), false});
  }
  if (perStep < 0)
    perStep = 0;
  int64_t step = perStep * exe.batchParts(), tokens = bytes / itemSize;
  if (tokens < step + 1)
    throw Error(path + ": " + std::to_string(tokens) + " tokens, fewer than one step takes (" +
                std::to_string(step) + ", and one more for shifted labels)");
  return std::make_unique<TokenSource>(path, std::move(region), itemSize,
                                       options.tokenDType, std::move(feeds), perStep,
                                       exe.batchParts(), options.part);
}

//===----------------------------------------------------------------------===//
// Synthetic data
//===----------------------------------------------------------------------===//

uint64_t splitmix(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class SyntheticSource : public DataSource {
public:
  SyntheticSource(const Executable &exe, uint64_t seed, int64_t part)
      : exe(exe), seed(seed), part(part) {}

  void next(InputSink &inputs) override {
    const std::vector<int32_t> &ids = exe.inputs();
    for (size_t idx = 0; idx < ids.size(); ++idx) {
      int32_t id = ids[idx];
      const Buffer &b = exe.buffer(id);
      DType dtype = b.dtype();
      int64_t n = exe.numElements(id);
      char *dst = static_cast<char *>(inputs.inputStorage(id));
      if (isAttentionMask(b)) {
        fillOnes(dst, dtype, n);
        continue;
      }
      // The data of (step, input) depends on nothing else.
      uint64_t state = seed;
      splitmix(state);
      state ^= (uint64_t(step) + 1) * 0xd1342543de82ef95ull;
      splitmix(state);
      state ^= (uint64_t(idx) + 1) * 0xaf251af3b0f025b5ull;
      uint64_t bound = b.int_max() > 0 ? uint64_t(b.int_max()) : 2;
      // The batch of all parts is drawn; this rank keeps its own.
      for (int64_t i = 0, first = part * n; i < first + n; ++i) {
        char *p = dst + (i - first) * dtypeSize(dtype);
        if (i < first) {
          splitmix(state);
          if (isFloat(dtype))
            splitmix(state);
          continue;
        }
        if (!isFloat(dtype)) {
          uint64_t r = uint64_t((__uint128_t(splitmix(state)) * bound) >> 64);
          switch (dtype) {
          case I64: {
            int64_t v = int64_t(r);
            std::memcpy(p, &v, 8);
            break;
          }
          case I32: {
            int32_t v = int32_t(r);
            std::memcpy(p, &v, 4);
            break;
          }
          case BOOL:
            *p = char(r & 1);
            break;
          default: {
            int8_t v = int8_t(r);
            std::memcpy(p, &v, 1);
            break;
          }
          }
          continue;
        }
        // Box-Muller from two uniforms in (0, 1].
        double u1 = (double(splitmix(state) >> 11) + 1) * 0x1.0p-53;
        double u2 = double(splitmix(state) >> 11) * 0x1.0p-53;
        double v = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
        switch (dtype) {
        case F32: {
          float f = float(v);
          std::memcpy(p, &f, 4);
          break;
        }
        case F64:
          std::memcpy(p, &v, 8);
          break;
        case F16: {
          uint16_t h = floatToHalf(float(v));
          std::memcpy(p, &h, 2);
          break;
        }
        default: {
          uint16_t h = floatToBf16(float(v));
          std::memcpy(p, &h, 2);
          break;
        }
        }
      }
    }
    ++step;
  }

  void seek(int64_t steps) override { step = steps; }

  std::string description() const override {
    return "synthetic data (seed " + std::to_string(seed) + ")";
  }

private:
  const Executable &exe;
  uint64_t seed;
  int64_t part, step = 0;
};

} // namespace

std::unique_ptr<DataSource> openDataSource(const std::string &spec, const Executable &exe,
                                           const DataOptions &options) {
  if (options.part < 0 || options.part >= exe.batchParts())
    throw Error("batch part " + std::to_string(options.part) + " is out of range (the " +
                "program splits the batch into " + std::to_string(exe.batchParts()) + ")");
  if (spec == "synthetic")
    return std::make_unique<SyntheticSource>(exe, options.seed, options.part);
  if (!isRegularFile(spec))
    throw Error("cannot open data file '" + spec +
                "': " + (isDirectory(spec) ? "it is a directory" : "no such file"));
  if (!options.tokenDType.empty())
    return openTokens(spec, exe, options);
  if (endsWith(spec, ".npy")) {
    if (exe.inputs().size() > 1) {
      std::string names;
      for (int32_t id : exe.inputs())
        names += (names.empty() ? "" : ", ") + exe.buffer(id).name();
      throw Error(spec + ": an .npy file holds one array but the program has " +
                  std::to_string(exe.inputs().size()) + " inputs (" + names +
                  "): give an .npz with one array per input");
    }
    std::map<std::string, NpyArray> arrays;
    arrays.emplace("", readNpy(spec));
    return openArrays(spec, std::move(arrays), exe, true, options.part);
  }
  if (endsWith(spec, ".npz"))
    return openArrays(spec, readNpz(spec), exe, false, options.part);
  throw Error("cannot tell the format of '" + spec +
              "': use .npy or .npz, or give --token-dtype uint16|int32 for a flat file "
              "of token ids");
}

} // namespace colo::runtime
