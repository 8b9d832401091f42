//===- Npy.cpp - NumPy .npy and .npz files --------------------------------===//

#include "Npy.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Files.h"

#include <zlib.h>

#include <cctype>
#include <cstring>
#include <limits>

namespace colo::runtime {

std::string NpyArray::typeName() const {
  std::string bits = std::to_string(itemSize * 8);
  switch (kind) {
  case 'b':
    return "bool";
  case 'i':
    return "int" + bits;
  case 'u':
    return "uint" + bits;
  case 'f':
    return "float" + bits;
  default:
    return std::string(1, kind) + std::to_string(itemSize);
  }
}

namespace {

/// A tiny reader for the Python dict literal of an .npy header.
class HeaderParser {
public:
  HeaderParser(const std::string &text, const std::string &what) : s(text), what(what) {}

  void parse(std::string &descr, bool &fortran, Shape &shape) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    expect('{');
    while (true) {
      skipSpace();
      if (peek() == '}')
        break;
      std::string key = string();
      expect(':');
      if (key == "descr") {
        descr = string();
        haveDescr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        haveFortran = true;
      } else if (key == "shape") {
        shape = tuple();
        haveShape = true;
      } else {
        fail("unknown header key '" + key + "'");
      }
      skipSpace();
      if (peek() == ',')
        ++pos;
    }
    if (!haveDescr || !haveFortran || !haveShape)
      fail("the header lacks descr, fortran_order or shape");
  }

private:
  [[noreturn]] void fail(const std::string &msg) {
    throw Error(what + ": bad .npy header: " + msg);
  }
  void skipSpace() {
    while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos])))
      ++pos;
  }
  char peek() {
    if (pos >= s.size())
      fail("unexpected end");
    return s[pos];
  }
  void expect(char c) {
    skipSpace();
    if (peek() != c)
      fail(std::string("expected '") + c + "'");
    ++pos;
  }
  std::string string() {
    skipSpace();
    char q = peek();
    if (q != '\'' && q != '"')
      fail("expected a string");
    size_t end = s.find(q, pos + 1);
    if (end == std::string::npos)
      fail("unterminated string");
    std::string out = s.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    return out;
  }
  bool boolean() {
    skipSpace();
    if (s.compare(pos, 4, "True") == 0) {
      pos += 4;
      return true;
    }
    if (s.compare(pos, 5, "False") == 0) {
      pos += 5;
      return false;
    }
    fail("expected True or False");
  }
  Shape tuple() {
    expect('(');
    Shape shape;
    while (true) {
      skipSpace();
      if (peek() == ')') {
        ++pos;
        return shape;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        fail("shape is not a tuple of integers");
      int64_t v = 0;
      while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10)
          fail("dimension too large");
        v = v * 10 + (s[pos++] - '0');
      }
      // Python 2 wrote 3L.
      if (pos < s.size() && s[pos] == 'L')
        ++pos;
      shape.push_back(v);
      skipSpace();
      if (peek() == ',')
        ++pos;
    }
  }

  const std::string &s;
  const std::string &what;
  size_t pos = 0;
};

uint32_t le32(const unsigned char *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}
uint16_t le16(const unsigned char *p) { return uint16_t(p[0] | p[1] << 8); }
uint64_t le64(const unsigned char *p) { return le32(p) | uint64_t(le32(p + 4)) << 32; }

} // namespace

NpyArray parseNpy(const std::string &bytes, const std::string &what) {
  const auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
  if (bytes.size() < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0)
    throw Error(what + ": not a .npy file (no \\x93NUMPY magic)");
  int major = p[6];
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = le16(p + 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      throw Error(what + ": truncated .npy header");
    headerLen = le32(p + 8);
    headerStart = 12;
  } else {
    throw Error(what + ": unsupported .npy version " + std::to_string(major));
  }
  if (headerStart + headerLen > bytes.size())
    throw Error(what + ": truncated .npy header");
  std::string header = bytes.substr(headerStart, headerLen);
  if (header.find('\0') != std::string::npos) // numpy refuses it too
    throw Error(what + ": bad .npy header: it holds a NUL byte");
  std::string descr;
  bool fortran = false;
  NpyArray array;
  HeaderParser(header, what).parse(descr, fortran, array.shape);
  if (fortran)
    throw Error(what + ": Fortran-ordered arrays are not supported (save "
                       "np.ascontiguousarray(a))");
  if (descr.size() < 3 || !std::isdigit(static_cast<unsigned char>(descr[2])))
    throw Error(what + ": unsupported array type '" + descr + "'");
  char order = descr[0];
  array.kind = descr[1];
  array.itemSize = std::atoi(descr.c_str() + 2);
  bool known = (array.kind == 'b' && array.itemSize == 1) ||
               ((array.kind == 'i' || array.kind == 'u') &&
                (array.itemSize == 1 || array.itemSize == 2 || array.itemSize == 4 ||
                 array.itemSize == 8)) ||
               (array.kind == 'f' &&
                (array.itemSize == 2 || array.itemSize == 4 || array.itemSize == 8));
  if (!known)
    throw Error(what + ": unsupported array type '" + descr +
                "' (bool, integers and float16/32/64 are read)");
  if (order == '>' && array.itemSize > 1)
    throw Error(what + ": big-endian arrays are not supported (save "
                       "a.astype(a.dtype.newbyteorder('<')))");
  int64_t elements = array.numElements();
  if (elements < 0)
    throw Error(what + ": bad shape " + shapeString(array.shape));
  size_t dataStart = headerStart + headerLen;
  uint64_t need = uint64_t(elements) * uint64_t(array.itemSize);
  if (bytes.size() - dataStart < need)
    throw Error(what + ": truncated: " + array.typeName() + " " +
                shapeString(array.shape) + " needs " + std::to_string(need) +
                " bytes of data, the file has " +
                std::to_string(bytes.size() - dataStart));
  array.data = bytes.substr(dataStart, need);
  return array;
}

NpyArray readNpy(const std::string &path) { return parseNpy(readFile(path), path); }

std::map<std::string, NpyArray> readNpz(const std::string &path) {
  std::string file = readFile(path);
  const auto *p = reinterpret_cast<const unsigned char *>(file.data());
  size_t size = file.size();
  auto fail = [&](const std::string &msg) -> Error {
    return Error(path + ": not a valid .npz (zip) file: " + msg);
  };
  // The end-of-central-directory record is in the last 64 KiB + 22 bytes.
  if (size < 22)
    throw fail("too short");
  size_t eocd = std::string::npos;
  for (size_t i = size - 22 + 1; i-- > 0 && size - i <= 65557;)
    if (le32(p + i) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd == std::string::npos)
    throw fail("no end-of-central-directory record (truncated?)");
  uint64_t count = le16(p + eocd + 10);
  uint64_t cdSize = le32(p + eocd + 12);
  uint64_t cdOffset = le32(p + eocd + 16);
  // zip64: a locator right before the record points at the zip64 record.
  if (eocd >= 20 && le32(p + eocd - 20) == 0x07064b50) {
    uint64_t z64 = le64(p + eocd - 20 + 8);
    if (z64 > size || size - z64 < 56 || le32(p + z64) != 0x06064b50)
      throw fail("bad zip64 end-of-central-directory record");
    count = le64(p + z64 + 32);
    cdSize = le64(p + z64 + 40);
    cdOffset = le64(p + z64 + 48);
  }
  if (cdOffset > size || cdSize > size - cdOffset)
    throw fail("central directory outside the file (truncated?)");

  std::map<std::string, NpyArray> arrays;
  size_t at = cdOffset;
  for (uint64_t e = 0; e < count; ++e) {
    if (at + 46 > size || le32(p + at) != 0x02014b50)
      throw fail("bad central directory entry");
    uint16_t flags = le16(p + at + 8), method = le16(p + at + 10);
    uint32_t crc = le32(p + at + 16);
    uint64_t compSize = le32(p + at + 20), rawSize = le32(p + at + 24);
    uint16_t nameLen = le16(p + at + 28), extraLen = le16(p + at + 30),
             commentLen = le16(p + at + 32);
    uint64_t localOffset = le32(p + at + 42);
    if (at + 46 + nameLen + extraLen + commentLen > cdOffset + cdSize)
      throw fail("a central directory entry runs past the central directory");
    std::string name(reinterpret_cast<const char *>(p + at + 46), nameLen);
    // zip64 extra field: the 64-bit values of the fields that are 0xffffffff.
    const unsigned char *x = p + at + 46 + nameLen, *xEnd = x + extraLen;
    while (x + 4 <= xEnd) {
      uint16_t id = le16(x), len = le16(x + 2);
      if (len > xEnd - x - 4)
        throw fail("an extra field of '" + name + "' runs past its central directory entry");
      const unsigned char *v = x + 4, *vEnd = v + len;
      if (id == 0x0001) {
        if (rawSize == 0xffffffff && v + 8 <= vEnd) {
          rawSize = le64(v);
          v += 8;
        }
        if (compSize == 0xffffffff && v + 8 <= vEnd) {
          compSize = le64(v);
          v += 8;
        }
        if (localOffset == 0xffffffff && v + 8 <= vEnd)
          localOffset = le64(v);
      }
      x += 4 + len;
    }
    at += 46 + nameLen + extraLen + commentLen;

    std::string what = path + ": array '" + name + "'";
    if (flags & 1)
      throw Error(what + ": encrypted zip entries are not supported");
    if (localOffset > size || size - localOffset < 30 || le32(p + localOffset) != 0x04034b50)
      throw fail("bad local header of '" + name + "'");
    uint64_t dataAt =
        localOffset + 30 + le16(p + localOffset + 26) + le16(p + localOffset + 28);
    if (dataAt > size || compSize > size - dataAt)
      throw fail("'" + name + "' extends past the end (truncated?)");
    std::string raw;
    if (method == 0) {
      if (compSize != rawSize)
        throw fail("stored entry '" + name + "' has two sizes");
      raw.assign(reinterpret_cast<const char *>(p + dataAt), compSize);
    } else if (method == 8) {
      // Deflate expands at most about 1032:1: a larger claim is a lie that
      // would make the reader allocate what the file cannot hold.
      if (rawSize / 1032 > compSize + 1)
        throw fail("'" + name + "' claims " + std::to_string(rawSize) + " bytes from " +
                   std::to_string(compSize) + " compressed, more than deflate can produce");
      raw.resize(rawSize);
      z_stream zs{};
      if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
        throw Error(what + ": zlib initialisation failed");
      zs.next_in = const_cast<Bytef *>(p + dataAt);
      zs.avail_in = 0;
      zs.next_out = reinterpret_cast<Bytef *>(raw.data());
      zs.avail_out = 0;
      uint64_t inLeft = compSize, outLeft = rawSize;
      int rc = Z_OK;
      // avail_in/avail_out are 32-bit: feed in chunks.
      while (rc == Z_OK) {
        if (zs.avail_in == 0 && inLeft) {
          zs.avail_in = uInt(std::min<uint64_t>(inLeft, 1u << 30));
          inLeft -= zs.avail_in;
        }
        if (zs.avail_out == 0 && outLeft) {
          zs.avail_out = uInt(std::min<uint64_t>(outLeft, 1u << 30));
          outLeft -= zs.avail_out;
        }
        rc = inflate(&zs, Z_NO_FLUSH);
        if (rc == Z_BUF_ERROR && zs.avail_in == 0 && inLeft == 0)
          break;
      }
      uint64_t produced = zs.total_out;
      inflateEnd(&zs);
      if (rc != Z_STREAM_END || produced != rawSize)
        throw Error(what + ": corrupt compressed data");
    } else {
      throw Error(what + ": unsupported zip compression method " +
                  std::to_string(method));
    }
    uLong check = 0;
    for (uint64_t off = 0; off < raw.size(); off += 1u << 30)
      check = crc32(check, reinterpret_cast<const Bytef *>(raw.data()) + off,
                    uInt(std::min<uint64_t>(raw.size() - off, 1u << 30)));
    if (check != crc)
      throw Error(what + ": CRC mismatch (corrupt file)");
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
      name.resize(name.size() - 4);
    else
      continue; // not an array
    arrays[name] = parseNpy(raw, path + ": array '" + name + "'");
  }
  return arrays;
}

bool convertible(char kind, int itemSize, DType dtype) {
  switch (dtype) {
  case F32:
  case F64:
  case F16:
  case BF16:
    return kind == 'f';
  case I64:
  case I32:
  case I8:
    return kind == 'i' || kind == 'u';
  case BOOL:
    return kind == 'b';
  default:
    return false;
  }
}

namespace {
template <typename T> T load(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

double loadFloat(const char *p, int itemSize) {
  switch (itemSize) {
  case 2:
    return halfToFloat(load<uint16_t>(p));
  case 4:
    return load<float>(p);
  default:
    return load<double>(p);
  }
}

/// Integers as int64, with a flag for uint64 values that do not fit.
int64_t loadInt(const char *p, char kind, int itemSize, bool &tooLarge) {
  tooLarge = false;
  if (kind == 'i') {
    switch (itemSize) {
    case 1:
      return load<int8_t>(p);
    case 2:
      return load<int16_t>(p);
    case 4:
      return load<int32_t>(p);
    default:
      return load<int64_t>(p);
    }
  }
  switch (itemSize) {
  case 1:
    return load<uint8_t>(p);
  case 2:
    return load<uint16_t>(p);
  case 4:
    return load<uint32_t>(p);
  default: {
    uint64_t v = load<uint64_t>(p);
    tooLarge = v > uint64_t(std::numeric_limits<int64_t>::max());
    return int64_t(v);
  }
  }
}
} // namespace

std::string IntBound::refusal(int64_t v) const {
  std::string range = "[0, " + std::to_string(max) + ")";
  if (v >= max)
    return "is not below " + std::to_string(max) + ", the input's int_max";
  if (ignored)
    return "is neither in " + range + " nor " + std::to_string(*ignored) +
           ", the loss's ignore_index";
  return "is negative: the input's values lie in " + range + " (int_max " +
         std::to_string(max) + ")";
}

void convertElements(const void *src, char kind, int itemSize, DType dtype, void *dst,
                     int64_t count, const std::string &what, const IntBound &bound,
                     int64_t firstIndex) {
  if (!convertible(kind, itemSize, dtype))
    throw Error(what + ": cannot convert " + NpyArray{kind, itemSize, {}, {}}.typeName() +
                " to " + dtypeName(dtype));
  const char *in = static_cast<const char *>(src);
  char *out = static_cast<char *>(dst);
  int64_t outSize = dtypeSize(dtype);
  if (kind == 'b') {
    for (int64_t i = 0; i < count; ++i)
      out[i] = in[i] ? 1 : 0;
    return;
  }
  if (kind == 'f') {
    if ((dtype == F32 && itemSize == 4) || (dtype == F64 && itemSize == 8) ||
        (dtype == F16 && itemSize == 2)) {
      std::memcpy(out, in, size_t(count * itemSize));
      return;
    }
    for (int64_t i = 0; i < count; ++i) {
      double v = loadFloat(in + i * itemSize, itemSize);
      char *o = out + i * outSize;
      switch (dtype) {
      case F32: {
        float f = float(v);
        std::memcpy(o, &f, 4);
        break;
      }
      case F64:
        std::memcpy(o, &v, 8);
        break;
      case F16: {
        uint16_t h = floatToHalf(float(v));
        std::memcpy(o, &h, 2);
        break;
      }
      default: {
        uint16_t b = floatToBf16(float(v));
        std::memcpy(o, &b, 2);
        break;
      }
      }
    }
    return;
  }
  int64_t lo = dtype == I8    ? -128
               : dtype == I32 ? std::numeric_limits<int32_t>::min()
                              : std::numeric_limits<int64_t>::min();
  int64_t hi = dtype == I8    ? 127
               : dtype == I32 ? std::numeric_limits<int32_t>::max()
                              : std::numeric_limits<int64_t>::max();
  for (int64_t i = 0; i < count; ++i) {
    bool tooLarge;
    int64_t v = loadInt(in + i * itemSize, kind, itemSize, tooLarge);
    if (tooLarge || v < lo || v > hi)
      throw Error(what + ": value at index " + std::to_string(firstIndex + i) +
                  " does not fit in " + dtypeName(dtype));
    if (!bound.admits(v))
      throw Error(what + ": value " + std::to_string(v) + " at index " +
                  std::to_string(firstIndex + i) + " " + bound.refusal(v));
    char *o = out + i * outSize;
    switch (dtype) {
    case I64:
      std::memcpy(o, &v, 8);
      break;
    case I32: {
      int32_t w = int32_t(v);
      std::memcpy(o, &w, 4);
      break;
    }
    default: {
      int8_t w = int8_t(v);
      std::memcpy(o, &w, 1);
      break;
    }
    }
  }
}

} // namespace colo::runtime
