//===- Safetensors.cpp - Reading and writing .safetensors files -----------===//

#include "colo/Runtime/Safetensors.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <set>
#include <sys/stat.h>

namespace colo::runtime {

namespace {
// The reference implementation refuses headers over 100 MB.
constexpr uint64_t kMaxHeader = 100'000'000;

uint64_t readLE64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}
} // namespace

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string &path) {
  auto fail = [&](const std::string &msg) -> Error { return Error(path + ": " + msg); };
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw Error("cannot open '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw Error("cannot open '" + path + "': not a regular file");
  int64_t fileSize = st.st_size;
  if (fileSize < 8)
    throw fail("not a safetensors file: " + std::to_string(fileSize) +
               " bytes, shorter than the 8-byte header length");

  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->region_ = std::make_unique<MappedRegion>(path, 0, fileSize);
  if (!file->region_->ok())
    throw Error(file->region_->error());
  const auto *bytes = static_cast<const unsigned char *>(file->region_->data());
  uint64_t headerLen = readLE64(bytes);
  if (headerLen > kMaxHeader || int64_t(headerLen) > fileSize - 8)
    throw fail("not a safetensors file (truncated?): the header claims " +
               std::to_string(headerLen) + " bytes but the file has " +
               std::to_string(fileSize - 8) + " after the length");
  file->dataStart_ = 8 + int64_t(headerLen);
  int64_t dataSize = fileSize - file->dataStart_;

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes + 8, bytes + 8 + headerLen);
  } catch (const nlohmann::json::exception &e) {
    throw fail(std::string("bad header: not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object())
    throw fail("bad header: not a JSON object");

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    const nlohmann::json &v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object())
        throw fail("bad header: __metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          throw fail("bad header: __metadata__ value '" + m.key() + "' is not a string");
        file->metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string &msg) {
      return fail("tensor '" + name + "': " + msg);
    };
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
        !v.contains("data_offsets"))
      throw bad("needs dtype, shape and data_offsets");
    const auto &dt = v["dtype"], &sh = v["shape"], &off = v["data_offsets"];
    if (!dt.is_string())
      throw bad("dtype is not a string");
    std::optional<DType> dtype = parseSafetensorsName(dt.get<std::string>());
    if (!dtype)
      throw bad("unsupported dtype " + dt.get<std::string>() +
                " (the runtime reads F32, F64, BF16, F16, I64, I32, I8, BOOL)");
    Entry e;
    e.name = name;
    e.dtype = *dtype;
    if (!sh.is_array())
      throw bad("shape is not a list");
    for (const auto &d : sh) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        throw bad("shape has a dimension that is not a non-negative integer");
      e.shape.push_back(d.get<int64_t>());
    }
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
      throw bad("data_offsets is not [begin, end]");
    uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end || end > uint64_t(dataSize))
      throw bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                "] outside the " + std::to_string(dataSize) +
                " data bytes (truncated file?)");
    int64_t elements = numElements(e.shape);
    if (elements < 0 || int64_t(end - begin) != elements * dtypeSize(e.dtype))
      throw bad(std::to_string(end - begin) + " bytes do not hold " +
                typeString(e.dtype, e.shape));
    e.begin = int64_t(begin);
    e.end = int64_t(end);
    file->entries_.push_back(std::move(e));
  }
  std::sort(file->entries_.begin(), file->entries_.end(),
            [](const Entry &a, const Entry &b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  // The tensors tile the data section, as the reference implementation
  // requires: no overlap, no hole.
  int64_t covered = 0;
  for (size_t i = 0; i < file->entries_.size(); ++i) {
    const Entry &e = file->entries_[i];
    if (i > 0 && e.begin < file->entries_[i - 1].end)
      throw fail("tensors '" + file->entries_[i - 1].name + "' and '" + e.name +
                 "' overlap");
    if (e.begin != covered)
      throw fail("bytes [" + std::to_string(covered) + ", " + std::to_string(e.begin) +
                 ") of the data belong to no tensor");
    covered = e.end;
    file->index_[e.name] = i;
  }
  return file;
}

const SafetensorsFile::Entry *SafetensorsFile::find(const std::string &name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const void *SafetensorsFile::data(const Entry &entry) const {
  return static_cast<const char *>(region_->data()) + dataStart_ + entry.begin;
}

void SafetensorsFile::release(const Entry &entry) const {
  region_->release(dataStart_ + entry.begin, dataStart_ + entry.end);
}

void writeSafetensors(const std::string &path, const std::vector<TensorView> &tensors,
                      const std::map<std::string, std::string> &metadata) {
  writeSafetensors(path, tensors, metadata, [&](size_t i, std::ostream &out) {
    const TensorView &t = tensors[i];
    out.write(static_cast<const char *>(t.data),
              std::streamsize(numElements(t.shape) * dtypeSize(t.dtype)));
  });
}

void writeSafetensors(const std::string &path, const std::vector<TensorView> &tensors,
                      const std::map<std::string, std::string> &metadata,
                      const std::function<void(size_t, std::ostream &)> &writeData) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::set<std::string> names;
  for (const TensorView &t : tensors) {
    if (t.name == "__metadata__" || !names.insert(t.name).second)
      throw Error("cannot write '" + path + "': tensor name '" + t.name +
                  "' is reserved or repeated");
    int64_t bytes = numElements(t.shape) * dtypeSize(t.dtype);
    header[t.name] = {{"dtype", safetensorsName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + uint64_t(bytes)}}};
    offset += uint64_t(bytes);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  writeFileAtomically(path, [&](std::ostream &out) {
    unsigned char len[8];
    uint64_t n = text.size();
    for (int i = 0; i < 8; ++i)
      len[i] = (n >> (8 * i)) & 0xff;
    out.write(reinterpret_cast<const char *>(len), 8);
    out.write(text.data(), std::streamsize(text.size()));
    for (size_t i = 0; i < tensors.size(); ++i)
      writeData(i, out);
  });
}

} // namespace colo::runtime
