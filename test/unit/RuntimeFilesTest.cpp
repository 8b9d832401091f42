// The runtime's file formats: safetensors (round trip, corrupt files, and
// files written and read by the reference `safetensors` package when Python
// has it), NumPy .npy/.npz (hand-built files, and files from numpy itself),
// element conversions and 16-bit floats; and the data sources that feed a
// program's inputs from them (batches, wrap-around, token files, synthetic
// data, and the errors for data that does not fit).
#include "Npy.h"
#include "ProgramBuilder.h"
#include "RuntimeTestUtil.h"
#include "colo/Runtime/DataSource.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Files.h"
#include "colo/Runtime/Safetensors.h"
#include "colo/Runtime/Session.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>

using namespace colo::runtime;

namespace {

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), std::streamsize(bytes.size()));
}

/// Runs a Python script: 0 on success, 77 if Python or a module is missing.
int runPython(const std::string &script, const TempDir &dir) {
  std::string path = dir / "script.py";
  std::ofstream(path) << "import sys\nd = sys.argv[1]\n" << script;
  std::string cmd = std::string(COLO_TEST_PYTHON) + " " + path + " " + dir.path;
  int status = std::system(cmd.c_str());
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) == 127)
    return 77;
  return WEXITSTATUS(status);
}

/// EXPECT that `f` throws Error with every one of `parts` in its message.
template <typename F> void expectError(F f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error &e) {
    std::string msg = e.what();
    for (const std::string &p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

TEST(RuntimeFiles, AtomicWritesLeaveNoTemporaryAndPipesStayPipes) {
  TempDir dir;
  std::string p = dir / "a.txt";
  writeFileAtomically(p, [](std::ostream &out) { out << "one"; });
  writeFileAtomically(p, [](std::ostream &out) { out << "two"; });
  EXPECT_EQ(readFile(p), "two");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path),
                          std::filesystem::directory_iterator()),
            1); // the mkstemp file was renamed, none is left
  // A pipe (like -o /dev/null, a device) is written in place, not replaced.
  std::string pipe = dir / "pipe";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = readFile(pipe); });
  writeFileAtomically(pipe, [](std::ostream &out) { out << "through"; });
  reader.join();
  EXPECT_EQ(got, "through");
  struct stat st;
  ASSERT_EQ(::stat(pipe.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  expectError([&] { writeFileAtomically(dir.path, [](std::ostream &) {}); },
              {dir.path, "is a directory"});
}

TEST(RuntimeSafetensors, RoundTrip) {
  TempDir dir;
  std::vector<float> a = {1.5f, -2, 3, 4, 5, 6};
  std::vector<int64_t> step = {42};
  std::vector<uint16_t> h = {0x3c00, 0xc000, 0x7c00};
  writeSafetensors(dir / "t.safetensors",
                   {{"layer.weight", F32, {2, 3}, a.data()},
                    {"step", I64, {}, step.data()},
                    {"half", F16, {3}, h.data()}},
                   {{"format", "pt"}});
  auto file = SafetensorsFile::open(dir / "t.safetensors");
  ASSERT_EQ(file->entries().size(), 3u);
  const auto *w = file->find("layer.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, F32);
  EXPECT_EQ(w->shape, (Shape{2, 3}));
  EXPECT_EQ(std::memcmp(file->data(*w), a.data(), 24), 0);
  const auto *s = file->find("step");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(*static_cast<const int64_t *>(file->data(*s)), 42);
  EXPECT_EQ(std::memcmp(file->data(*file->find("half")), h.data(), 6), 0);
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(file->find("nope"), nullptr);
  // The data starts 8-byte aligned.
  std::string bytes = readFile(dir / "t.safetensors");
  uint64_t headerLen;
  std::memcpy(&headerLen, bytes.data(), 8);
  EXPECT_EQ(headerLen % 8, 0u);
  // No temporary file is left behind.
  int files = 0;
  for (auto &entry : std::filesystem::directory_iterator(dir.path))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
}

std::string safetensorsImage(const std::string &header, const std::string &data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

TEST(RuntimeSafetensors, RejectsCorruptFiles) {
  TempDir dir;
  std::string path = dir / "bad.safetensors";
  std::string good = R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  writeBytes(path, safetensorsImage(good, std::string(8, '\0')));
  EXPECT_NO_THROW(SafetensorsFile::open(path));

  // Truncated: the data is shorter than the header says.
  writeBytes(path, safetensorsImage(good, std::string(4, '\0')));
  expectError([&] { SafetensorsFile::open(path); }, {path, "tensor 'w'", "truncated"});
  // Truncated inside the header.
  writeBytes(path, safetensorsImage(good, std::string(8, '\0')).substr(0, 20));
  expectError([&] { SafetensorsFile::open(path); }, {path, "truncated"});
  // Shorter than the length field.
  writeBytes(path, "abc");
  expectError([&] { SafetensorsFile::open(path); }, {path, "not a safetensors file"});
  // Not JSON.
  writeBytes(path, safetensorsImage("{\"w\": [", std::string(8, '\0')));
  expectError([&] { SafetensorsFile::open(path); }, {path, "not valid JSON"});
  // Shape and byte count disagree.
  writeBytes(path, safetensorsImage(
                       R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})",
                       std::string(8, '\0')));
  expectError([&] { SafetensorsFile::open(path); }, {"tensor 'w'", "f32 [3]"});
  // Unknown dtype.
  writeBytes(path,
             safetensorsImage(
                 R"({"w": {"dtype": "F8_E4M3", "shape": [8], "data_offsets": [0, 8]}})",
                 std::string(8, '\0')));
  expectError([&] { SafetensorsFile::open(path); }, {"unsupported dtype F8_E4M3"});
  // Missing fields, negative dimensions, overlapping tensors.
  writeBytes(path, safetensorsImage(R"({"w": {"dtype": "F32"}})", ""));
  expectError([&] { SafetensorsFile::open(path); },
              {"needs dtype, shape and data_offsets"});
  writeBytes(path,
             safetensorsImage(
                 R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})",
                 std::string(8, '\0')));
  expectError([&] { SafetensorsFile::open(path); }, {"non-negative"});
  writeBytes(path, safetensorsImage(
                       R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                  "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                       std::string(8, '\0')));
  expectError([&] { SafetensorsFile::open(path); }, {"overlap"});
  // A directory and a missing file.
  expectError([&] { SafetensorsFile::open(dir.path); }, {"not a regular file"});
  expectError([&] { SafetensorsFile::open(dir / "missing.safetensors"); },
              {"cannot open", "missing.safetensors"});
}

TEST(RuntimeSafetensors, InteroperatesWithTheReferenceImplementation) {
  TempDir dir;
  std::vector<float> a = {1, 2, 3, 4, 5, 6};
  std::vector<uint16_t> b = {floatToBf16(0.5f), floatToBf16(-3.0f)};
  writeSafetensors(
      dir / "ours.safetensors",
      {{"fc.weight", F32, {3, 2}, a.data()}, {"fc.bias", BF16, {2}, b.data()}},
      {{"format", "pt"}});
  int status = runPython(R"(
try:
    import torch
    from safetensors.torch import load_file, save_file
except ImportError:
    sys.exit(77)
t = load_file(d + '/ours.safetensors')
assert t['fc.weight'].dtype == torch.float32 and t['fc.weight'].shape == (3, 2)
assert t['fc.weight'].flatten().tolist() == [1, 2, 3, 4, 5, 6]
assert t['fc.bias'].dtype == torch.bfloat16 and t['fc.bias'].tolist() == [0.5, -3.0]
save_file({'x': torch.arange(6, dtype=torch.int64).reshape(2, 3),
           'y': torch.tensor([1.5, 2.5], dtype=torch.float16),
           'z': torch.tensor(7.0)}, d + '/theirs.safetensors', metadata={'k': 'v'})
)",
                         dir);
  if (status == 77)
    GTEST_SKIP() << "Python with torch and safetensors is not available";
  ASSERT_EQ(status, 0);
  auto file = SafetensorsFile::open(dir / "theirs.safetensors");
  const auto *x = file->find("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->dtype, I64);
  EXPECT_EQ(x->shape, (Shape{2, 3}));
  EXPECT_EQ(static_cast<const int64_t *>(file->data(*x))[5], 5);
  const auto *y = file->find("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(halfToFloat(static_cast<const uint16_t *>(file->data(*y))[1]), 2.5f);
  const auto *z = file->find("z");
  ASSERT_NE(z, nullptr);
  EXPECT_TRUE(z->shape.empty());
  EXPECT_EQ(file->metadata().at("k"), "v");
}

//===----------------------------------------------------------------------===//
// .npy / .npz
//===----------------------------------------------------------------------===//

std::string npyImage(const std::string &descr, const std::string &shape,
                     const std::string &data, bool fortran = false) {
  std::string dict = "{'descr': '" + descr +
                     "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  std::string header =
      dict + std::string((64 - (10 + dict.size() + 1) % 64) % 64, ' ') + "\n";
  std::string out("\x93NUMPY\x01\x00", 8);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  return out + header + data;
}

template <typename T> std::string raw(std::initializer_list<T> values) {
  std::vector<T> v(values);
  return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
}

/// A zip archive of `members`, stored or deflated, as np.savez writes them.
std::string zipImage(const std::vector<std::pair<std::string, std::string>> &members,
                     bool compress) {
  std::string out, central;
  auto u16 = [](std::string &s, uint16_t v) { s += char(v & 0xff), s += char(v >> 8); };
  auto u32 = [&](std::string &s, uint32_t v) {
    u16(s, uint16_t(v & 0xffff));
    u16(s, uint16_t(v >> 16));
  };
  for (const auto &[name, data] : members) {
    std::string body = data;
    if (compress) {
      z_stream zs{};
      deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
      body.resize(deflateBound(&zs, uLong(data.size())));
      zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
      zs.avail_in = uInt(data.size());
      zs.next_out = reinterpret_cast<Bytef *>(body.data());
      zs.avail_out = uInt(body.size());
      ::deflate(&zs, Z_FINISH);
      body.resize(zs.total_out);
      deflateEnd(&zs);
    }
    uint32_t crc = uint32_t(
        crc32(0, reinterpret_cast<const Bytef *>(data.data()), uInt(data.size())));
    uint32_t offset = uint32_t(out.size());
    u32(out, 0x04034b50);
    u16(out, 20), u16(out, 0), u16(out, compress ? 8 : 0), u16(out, 0), u16(out, 0);
    u32(out, crc), u32(out, uint32_t(body.size())), u32(out, uint32_t(data.size()));
    u16(out, uint16_t(name.size())), u16(out, 0);
    out += name + body;
    u32(central, 0x02014b50);
    u16(central, 20), u16(central, 20), u16(central, 0), u16(central, compress ? 8 : 0);
    u16(central, 0), u16(central, 0);
    u32(central, crc), u32(central, uint32_t(body.size())),
        u32(central, uint32_t(data.size()));
    u16(central, uint16_t(name.size())), u16(central, 0), u16(central, 0);
    u16(central, 0), u16(central, 0), u32(central, 0), u32(central, offset);
    central += name;
  }
  uint32_t cdOffset = uint32_t(out.size());
  out += central;
  u32(out, 0x06054b50);
  u16(out, 0), u16(out, 0), u16(out, uint16_t(members.size())),
      u16(out, uint16_t(members.size()));
  u32(out, uint32_t(central.size())), u32(out, cdOffset), u16(out, 0);
  return out;
}

TEST(RuntimeNpy, ReadsArrays) {
  TempDir dir;
  writeBytes(dir / "a.npy", npyImage("<f4", "(2, 3)", raw<float>({1, 2, 3, 4, 5, 6})));
  NpyArray a = readNpy(dir / "a.npy");
  EXPECT_EQ(a.kind, 'f');
  EXPECT_EQ(a.itemSize, 4);
  EXPECT_EQ(a.shape, (Shape{2, 3}));
  EXPECT_EQ(a.typeName(), "float32");
  EXPECT_EQ(a.data, raw<float>({1, 2, 3, 4, 5, 6}));

  writeBytes(dir / "s.npy", npyImage("<i8", "()", raw<int64_t>({-7})));
  NpyArray s = readNpy(dir / "s.npy");
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.numElements(), 1);

  writeBytes(dir / "b.npy", npyImage("|b1", "(3,)", std::string("\1\0\1", 3)));
  EXPECT_EQ(readNpy(dir / "b.npy").typeName(), "bool");
}

TEST(RuntimeNpy, RejectsBadArrays) {
  TempDir dir;
  std::string p = dir / "bad.npy";
  writeBytes(p, npyImage("<f4", "(2, 3)", raw<float>({1, 2, 3})));
  expectError([&] { readNpy(p); }, {p, "truncated", "float32 [2, 3]"});
  writeBytes(p, npyImage("<f4", "(2,)", raw<float>({1, 2}), true));
  expectError([&] { readNpy(p); }, {"Fortran"});
  writeBytes(p, npyImage(">f4", "(2,)", raw<float>({1, 2})));
  expectError([&] { readNpy(p); }, {"big-endian"});
  writeBytes(p, npyImage("|O", "(2,)", raw<float>({1, 2})));
  expectError([&] { readNpy(p); }, {"unsupported array type"});
  writeBytes(p, "not numpy at all");
  expectError([&] { readNpy(p); }, {"not a .npy file"});
  writeBytes(p, npyImage("<f4", "[2]", raw<float>({1, 2})));
  expectError([&] { readNpy(p); }, {"bad .npy header"});
}

TEST(RuntimeNpz, StoredAndDeflatedMembers) {
  TempDir dir;
  std::string x = npyImage("<f8", "(4, 2)", raw<double>({1, 2, 3, 4, 5, 6, 7, 8}));
  std::string y = npyImage("<i4", "(4,)", raw<int32_t>({0, 1, 2, 3}));
  for (bool deflate : {false, true}) {
    SCOPED_TRACE(deflate ? "deflated" : "stored");
    writeBytes(dir / "d.npz", zipImage({{"x.npy", x}, {"labels.npy", y}}, deflate));
    auto arrays = readNpz(dir / "d.npz");
    ASSERT_EQ(arrays.size(), 2u);
    EXPECT_EQ(arrays["x"].shape, (Shape{4, 2}));
    EXPECT_EQ(arrays["x"].typeName(), "float64");
    EXPECT_EQ(arrays["labels"].data, raw<int32_t>({0, 1, 2, 3}));
  }
}

TEST(RuntimeNpz, RejectsCorruptArchives) {
  TempDir dir;
  std::string p = dir / "bad.npz";
  std::string x = npyImage("<f4", "(2,)", raw<float>({1, 2}));
  std::string zip = zipImage({{"x.npy", x}}, false);
  // A flipped data byte fails the CRC.
  std::string flipped = zip;
  flipped[30 + 5 + x.size() - 1] ^= 0x40;
  writeBytes(p, flipped);
  expectError([&] { readNpz(p); }, {p, "array 'x.npy'", "CRC"});
  // Truncated: the end record is gone.
  writeBytes(p, zip.substr(0, zip.size() - 30));
  expectError([&] { readNpz(p); }, {p, "not a valid .npz"});
  writeBytes(p, "PK");
  expectError([&] { readNpz(p); }, {"not a valid .npz"});
  // Corrupt deflate data.
  std::string deflated = zipImage({{"x.npy", x}}, true);
  std::string bomb = deflated;
  deflated[30 + 5 + 2] ^= 0xff;
  writeBytes(p, deflated);
  EXPECT_THROW(readNpz(p), Error);
  // A member that claims 3.75 GiB from a few bytes is refused before any
  // allocation (what the fuzzer found: readNpz allocated the claimed size).
  size_t central = bomb.find(std::string("PK\x01\x02", 4));
  for (int i = 0; i < 4; ++i)
    bomb[central + 24 + i] = char(i == 3 ? 0xf0 : 0x00);
  writeBytes(p, bomb);
  expectError([&] { readNpz(p); }, {p, "x.npy", "more than deflate can produce"});
}

TEST(RuntimeNpz, ReadsWhatNumpyWrites) {
  TempDir dir;
  int status = runPython(R"(
try:
    import numpy as np
except ImportError:
    sys.exit(77)
x = np.arange(12, dtype=np.float32).reshape(4, 3)
labels = np.array([3, 1, 4, 1], dtype=np.int64)
np.savez(d + '/plain.npz', x=x, labels=labels)
np.savez_compressed(d + '/small.npz', x=x, labels=labels)
np.save(d + '/one.npy', np.linspace(0, 1, 5))
)",
                         dir);
  if (status == 77)
    GTEST_SKIP() << "Python with numpy is not available";
  ASSERT_EQ(status, 0);
  for (const char *name : {"plain.npz", "small.npz"}) {
    SCOPED_TRACE(name);
    auto arrays = readNpz(dir / name);
    ASSERT_EQ(arrays.count("x"), 1u);
    ASSERT_EQ(arrays.count("labels"), 1u);
    EXPECT_EQ(arrays["x"].shape, (Shape{4, 3}));
    EXPECT_EQ(arrays["x"].data.size(), 48u);
    float last;
    std::memcpy(&last, arrays["x"].data.data() + 44, 4);
    EXPECT_EQ(last, 11.0f);
    EXPECT_EQ(arrays["labels"].data, raw<int64_t>({3, 1, 4, 1}));
  }
  NpyArray one = readNpy(dir / "one.npy");
  EXPECT_EQ(one.typeName(), "float64");
  EXPECT_EQ(one.shape, (Shape{5}));
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

TEST(RuntimeConvert, FloatsAndIntegers) {
  std::string f64 = raw<double>({1.5, -2.25});
  float f32[2];
  convertElements(f64.data(), 'f', 8, F32, f32, 2, "x");
  EXPECT_EQ(f32[0], 1.5f);
  EXPECT_EQ(f32[1], -2.25f);

  std::string i32 = raw<int32_t>({7, -100});
  int64_t i64[2];
  convertElements(i32.data(), 'i', 4, I64, i64, 2, "labels", {10, -100});
  EXPECT_EQ(i64[0], 7);
  EXPECT_EQ(i64[1], -100); // ignore_index passes
  std::string negative = raw<int32_t>({7, -5});
  expectError([&] { convertElements(negative.data(), 'i', 4, I64, i64, 2, "labels", {10, -100}); },
              {"value -5 at index 1", "neither in [0, 10) nor -100", "ignore_index"});
  expectError([&] { convertElements(i32.data(), 'i', 4, I64, i64, 2, "ids", {10}); },
              {"value -100 at index 1", "negative", "int_max 10"});

  std::string u16 = raw<uint16_t>({65535});
  int32_t out32;
  convertElements(u16.data(), 'u', 2, I32, &out32, 1, "t");
  EXPECT_EQ(out32, 65535);

  std::string big = raw<int64_t>({int64_t(1) << 40});
  expectError([&] { convertElements(big.data(), 'i', 8, I32, &out32, 1, "ids"); },
              {"ids", "index 0", "does not fit in i32"});
  std::string ids = raw<int64_t>({3, 12});
  expectError([&] { convertElements(ids.data(), 'i', 8, I64, i64, 2, "ids", {10}, 100); },
              {"value 12 at index 101", "int_max"});
  expectError([&] { convertElements(f64.data(), 'f', 8, I64, i64, 2, "x"); },
              {"cannot convert float64 to i64"});
  EXPECT_FALSE(convertible('i', 8, F32));
  EXPECT_TRUE(convertible('u', 1, I8));
}

TEST(RuntimeConvert, SixteenBitFloats) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f})
    EXPECT_EQ(halfToFloat(floatToHalf(v)), v) << v;
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(70000.0f), 0x7c00);           // overflow: inf
  EXPECT_EQ(floatToHalf(1.0f + 1.0f / 2048), 0x3c00); // tie rounds to even
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
  EXPECT_EQ(bf16ToFloat(floatToBf16(-3.0f)), -3.0f);
  EXPECT_EQ(floatToBf16(1.0f + 1.0f / 256), 0x3f80); // tie rounds to even
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  EXPECT_EQ(numElements({2, 3, 4}), 24);
  EXPECT_EQ(numElements({}), 1);
  EXPECT_EQ(numElements({-1}), -1);
  EXPECT_EQ(typeString(BF16, {4, 784}), "bf16 [4, 784]");
}

//===----------------------------------------------------------------------===//
// Data sources
//===----------------------------------------------------------------------===//

/// A program with only inputs (no steps), and a session on it.
struct InputsOnly {
  TempDir dir;
  ProgramBuilder b;
  std::shared_ptr<const Executable> exe;
  std::unique_ptr<Session> session;

  void load() {
    writeExecutable(dir.path, b.program(), {});
    exe = Executable::load(dir.path);
    session = std::make_unique<Session>(exe);
  }
  std::unique_ptr<DataSource> open(const std::string &spec, DataOptions options = {}) {
    return openDataSource(spec, *exe, options);
  }
  template <typename T> std::vector<T> values(int32_t id) const {
    const T *p = static_cast<const T *>(session->data(id));
    return std::vector<T>(p, p + exe->numElements(id));
  }
};

TEST(RuntimeData, NpzBatchesWrapAround) {
  InputsOnly p;
  int32_t x = p.b.input("x", F32, {4, 2});
  int32_t labels = p.b.input("labels", I64, {4});
  p.b.program().mutable_buffers(labels)->set_int_max(10);
  p.load();
  // 10 samples: x[i] = (2i, 2i + 1) as float64, labels[i] = i as int32.
  std::vector<double> xs;
  std::vector<int32_t> ls;
  for (int i = 0; i < 10; ++i) {
    xs.push_back(2 * i);
    xs.push_back(2 * i + 1);
    ls.push_back(i);
  }
  std::string xBytes(reinterpret_cast<const char *>(xs.data()), xs.size() * 8);
  std::string lBytes(reinterpret_cast<const char *>(ls.data()), ls.size() * 4);
  writeBytes(p.dir / "d.npz",
             zipImage({{"x.npy", npyImage("<f8", "(10, 2)", xBytes)},
                       {"labels.npy", npyImage("<i4", "(10,)", lBytes)},
                       {"unused.npy", npyImage("<f4", "(1,)", raw<float>({0}))}},
                      false));
  auto data = p.open(p.dir / "d.npz");
  EXPECT_NE(data->description().find("10 samples, 4 per step (3 steps per epoch)"),
            std::string::npos)
      << data->description();
  std::vector<std::vector<int64_t>> expected = {
      {0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 0, 1}, {2, 3, 4, 5}};
  for (const auto &rows : expected) {
    data->next(*p.session);
    EXPECT_EQ(p.values<int64_t>(labels), rows);
    std::vector<float> want;
    for (int64_t r : rows) {
      want.push_back(float(2 * r));
      want.push_back(float(2 * r + 1));
    }
    EXPECT_EQ(p.values<float>(x), want);
  }
}

TEST(RuntimeData, NpyWholeInputPerSample) {
  InputsOnly p;
  int32_t x = p.b.input("x", F32, {2, 2});
  p.load();
  // [3, 2, 2]: each step takes one whole [2, 2] sample.
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i)
    v[i] = float(i);
  writeBytes(p.dir / "x.npy",
             npyImage("<f4", "(3, 2, 2)",
                      std::string(reinterpret_cast<const char *>(v.data()), 48)));
  auto data = p.open(p.dir / "x.npy");
  for (int step : {0, 1, 2, 0}) {
    data->next(*p.session);
    EXPECT_EQ(p.values<float>(x)[0], float(4 * step));
  }
}

TEST(RuntimeData, ArrayErrorsNameTheArrayAndShapes) {
  InputsOnly p;
  p.b.input("x", F32, {4, 2});
  int32_t labels = p.b.input("labels", I64, {4});
  p.b.program().mutable_buffers(labels)->set_int_max(3);
  p.load();
  std::string x = npyImage("<f4", "(10, 3)", std::string(120, '\0'));
  std::string okX = npyImage("<f4", "(5, 2)", std::string(40, '\0'));
  std::string l = npyImage("<i8", "(5,)", raw<int64_t>({0, 1, 2, 3, 0}));
  writeBytes(p.dir / "shape.npz", zipImage({{"x.npy", x}, {"labels.npy", l}}, false));
  expectError([&] { p.open(p.dir / "shape.npz"); },
              {"shape.npz: array 'x' has shape [10, 3] but the input 'x' is f32 [4, 2]: "
               "expected [N, 2] (N samples first)"});
  writeBytes(p.dir / "missing.npz", zipImage({{"x.npy", okX}}, false));
  expectError([&] { p.open(p.dir / "missing.npz"); },
              {"no array 'labels' for the program's input 'labels' (the file has: x)"});
  std::string floatLabels = npyImage("<f4", "(5,)", std::string(20, '\0'));
  writeBytes(p.dir / "type.npz",
             zipImage({{"x.npy", okX}, {"labels.npy", floatLabels}}, false));
  expectError([&] { p.open(p.dir / "type.npz"); },
              {"array 'labels' holds float32 but the input 'labels' is i64"});
  std::string fewer = npyImage("<i8", "(4,)", raw<int64_t>({0, 1, 2, 0}));
  writeBytes(p.dir / "count.npz",
             zipImage({{"x.npy", okX}, {"labels.npy", fewer}}, false));
  expectError([&] { p.open(p.dir / "count.npz"); }, {"disagree: 5 vs 4 samples"});
  writeBytes(p.dir / "one.npy", okX);
  expectError([&] { p.open(p.dir / "one.npy"); },
              {"one.npy: an .npy file holds one array but the program has 2 inputs (x, "
               "labels)"});
  // A label past int_max is found when its batch is read.
  writeBytes(p.dir / "range.npz", zipImage({{"x.npy", okX}, {"labels.npy", l}}, false));
  auto data = p.open(p.dir / "range.npz");
  expectError([&] { data->next(*p.session); },
              {"range.npz: array 'labels'", "value 3 at index 3", "int_max"});
  expectError([&] { p.open(p.dir / "nothing.npz"); },
              {"cannot open data file", "no such file"});
  writeBytes(p.dir / "data.csv", "1,2\n");
  expectError([&] { p.open(p.dir / "data.csv"); },
              {"cannot tell the format of", "--token-dtype"});
}

TEST(RuntimeData, TokenFilesWithShiftedLabels) {
  InputsOnly p;
  int32_t ids = p.b.input("input_ids", I64, {2, 3});
  int32_t labels = p.b.input("labels", I32, {2, 3});
  int32_t mask = p.b.input("attention_mask", I64, {2, 3});
  p.load();
  std::vector<uint16_t> tokens = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  writeBytes(p.dir / "tokens.bin",
             std::string(reinterpret_cast<const char *>(tokens.data()), 20));
  DataOptions options;
  options.tokenDType = "uint16";
  options.shiftLabels = true;
  auto data = p.open(p.dir / "tokens.bin", options);
  EXPECT_NE(data->description().find("10 uint16 tokens, 6 per step"), std::string::npos);
  data->next(*p.session);
  EXPECT_EQ(p.values<int64_t>(ids), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(p.values<int32_t>(labels), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(p.values<int64_t>(mask), std::vector<int64_t>(6, 1));
  data->next(*p.session); // wraps around
  EXPECT_EQ(p.values<int64_t>(ids), (std::vector<int64_t>{6, 7, 8, 9, 0, 1}));
  EXPECT_EQ(p.values<int32_t>(labels), (std::vector<int32_t>{7, 8, 9, 0, 1, 2}));

  options.shiftLabels = false; // Hugging Face style: the same window
  auto same = p.open(p.dir / "tokens.bin", options);
  same->next(*p.session);
  EXPECT_EQ(p.values<int32_t>(labels), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
}

TEST(RuntimeData, TokenFileErrors) {
  InputsOnly p;
  int32_t ids = p.b.input("input_ids", I64, {1, 4});
  p.b.program().mutable_buffers(ids)->set_int_max(5);
  p.load();
  std::vector<int32_t> tokens = {1, 2, 3, 4, 4, 7};
  writeBytes(p.dir / "t32.bin",
             std::string(reinterpret_cast<const char *>(tokens.data()), 24));
  DataOptions options;
  options.tokenDType = "int32";
  auto data = p.open(p.dir / "t32.bin", options);
  data->next(*p.session);
  EXPECT_EQ(p.values<int64_t>(ids), (std::vector<int64_t>{1, 2, 3, 4}));
  expectError([&] { data->next(*p.session); },
              {"t32.bin: token 7 at position 5 is out of range for input 'input_ids' "
               "(vocabulary 5)"});
  writeBytes(p.dir / "odd.bin", "abc");
  options.tokenDType = "uint16";
  expectError([&] { p.open(p.dir / "odd.bin", options); },
              {"3 bytes is not a whole number of uint16 tokens"});
  options.tokenDType = "int8";
  expectError([&] { p.open(p.dir / "t32.bin", options); },
              {"unknown token dtype 'int8'"});

  InputsOnly f;
  f.b.input("x", F32, {2});
  f.load();
  options.tokenDType = "int32";
  expectError([&] { f.open(p.dir / "t32.bin", options); },
              {"input 'x' is f32 [2]: a token file fills only i64 or i32 inputs"});
}

TEST(RuntimeData, SyntheticIsDeterministic) {
  InputsOnly p;
  int32_t x = p.b.input("x", F32, {4096});
  int32_t labels = p.b.input("labels", I64, {1000});
  int32_t flags = p.b.input("flags", BOOL, {64});
  p.b.program().mutable_buffers(labels)->set_int_max(7);
  p.load();
  auto first = p.open("synthetic");
  first->next(*p.session);
  std::vector<float> x1 = p.values<float>(x);
  std::vector<int64_t> l1 = p.values<int64_t>(labels);
  double sum = 0, sq = 0;
  for (float v : x1) {
    sum += v;
    sq += double(v) * v;
  }
  EXPECT_NEAR(sum / 4096, 0, 0.1);
  EXPECT_NEAR(sq / 4096, 1, 0.1);
  std::vector<int> seen(7);
  for (int64_t v : l1) {
    ASSERT_GE(v, 0);
    ASSERT_LT(v, 7);
    seen[v] = 1;
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 7);
  for (char b : p.values<char>(flags))
    EXPECT_TRUE(b == 0 || b == 1);
  first->next(*p.session);
  EXPECT_NE(p.values<float>(x), x1); // another batch

  auto again = p.open("synthetic"); // same seed: same batches
  again->next(*p.session);
  EXPECT_EQ(p.values<float>(x), x1);
  EXPECT_EQ(p.values<int64_t>(labels), l1);
  DataOptions seeded;
  seeded.seed = 1;
  auto other = p.open("synthetic", seeded);
  other->next(*p.session);
  EXPECT_NE(p.values<float>(x), x1);
}

} // namespace
