#include "wire/wire.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace grader::wire {
namespace {

constexpr char kMagic[8] = {'A', 'T', 'T', 'N', 'W', 'I', 'R', '1'};
constexpr uint32_t kMaxKey = 256;
constexpr uint32_t kMaxDims = 8;
constexpr int64_t kMaxSize = int64_t{1} << 31;
constexpr uint32_t kMaxFields = 4096;
constexpr uint32_t kMaxRecords = 4096;

enum class Kind : uint8_t { tensor = 1, integer = 2, real = 3, string = 4 };

uint8_t dtype_code(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return 1;
    case at::kDouble:
      return 2;
    case at::kLong:
      return 3;
    case at::kBool:
      return 4;
    default:
      throw WireError(std::string("cannot send tensors of dtype ") + c10::toString(type));
  }
}

at::ScalarType dtype_from_code(uint8_t code) {
  switch (code) {
    case 1:
      return at::kFloat;
    case 2:
      return at::kDouble;
    case 3:
      return at::kLong;
    case 4:
      return at::kBool;
    default:
      throw WireError("unknown dtype code " + std::to_string(code));
  }
}

class Writer {
 public:
  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable<T>::value, "plain values only");
    out_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  void put_bytes(const void* data, size_t size) { out_.append(static_cast<const char*>(data), size); }
  void put_string(const std::string& text) {
    put<uint64_t>(text.size());
    put_bytes(text.data(), text.size());
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : data_(bytes.data()), left_(bytes.size()) {}

  template <typename T>
  T get() {
    T value;
    need(sizeof(T));
    std::memcpy(&value, data_, sizeof(T));
    advance(sizeof(T));
    return value;
  }
  const char* take(size_t size) {
    need(size);
    const char* at = data_;
    advance(size);
    return at;
  }
  std::string get_string(uint64_t limit) {
    auto size = get<uint64_t>();
    if (size > limit) throw WireError("string field longer than allowed");
    return std::string(take(size), size);
  }
  size_t left() const { return left_; }

 private:
  void need(size_t size) const {
    if (size > left_) throw WireError("message truncated");
  }
  void advance(size_t size) {
    data_ += size;
    left_ -= size;
  }
  const char* data_;
  size_t left_;
};

void encode_tensor(Writer& out, const at::Tensor& tensor) {
  if (!tensor.defined()) {
    out.put<uint8_t>(0);
    return;
  }
  auto plain = tensor.detach().to(at::kCPU).contiguous();
  out.put<uint8_t>(dtype_code(plain.scalar_type()));
  out.put<uint32_t>(plain.dim());
  for (auto size : plain.sizes()) out.put<int64_t>(size);
  out.put_bytes(plain.data_ptr(), plain.nbytes());
}

at::Tensor decode_tensor(Reader& in) {
  auto code = in.get<uint8_t>();
  if (code == 0) return at::Tensor();
  auto type = dtype_from_code(code);
  auto dims = in.get<uint32_t>();
  if (dims > kMaxDims) throw WireError("tensor has too many dimensions");
  std::vector<int64_t> sizes(dims);
  uint64_t count = 1, extent = 1;
  for (auto& size : sizes) {
    size = in.get<int64_t>();
    if (size < 0 || size > kMaxSize) throw WireError("tensor size out of range");
    // Every element needs at least a byte, so the message length bounds the count;
    // the product of the sizes counted as at least 1 bounds empty tensors too.
    if (size > 0 && count > in.left() / static_cast<uint64_t>(size)) throw WireError("tensor larger than the message");
    count *= static_cast<uint64_t>(size);
    extent *= static_cast<uint64_t>(std::max<int64_t>(size, 1));
    if (extent > kMaxSize) throw WireError("tensor size out of range");
  }
  at::Tensor tensor;
  try {
    tensor = at::empty(sizes, at::TensorOptions().dtype(type));
  } catch (const c10::Error& error) {
    throw WireError(std::string("cannot hold the tensor: ") + error.what_without_backtrace());
  }
  auto bytes = count * c10::elementSize(type);
  const char* data = in.take(bytes);
  if (bytes > 0) std::memcpy(tensor.data_ptr(), data, bytes);
  if (type == at::kBool) {
    // A bool byte other than 0 or 1 is undefined behaviour in C++: refuse it.
    for (uint64_t i = 0; i < bytes; ++i) {
      if (static_cast<unsigned char>(data[i]) > 1) throw WireError("invalid bool tensor value");
    }
  }
  return tensor;
}

}  // namespace

RunnerProgress runner_progress(const std::string& bytes) {
  RunnerProgress progress;
  if (bytes.compare(0, kRunnerReady.size(), kRunnerReady) != 0) return progress;
  progress.ready = true;
  progress.markers = 1;
  const std::string_view marker = kCaseStarted;
  // A case's index: up to 9 digits.
  auto index_digits = [](std::string_view digits) {
    return !digits.empty() && digits.size() <= 9 && digits.find_first_not_of("0123456789") == std::string_view::npos;
  };
  size_t at = kRunnerReady.size();
  while (bytes.compare(at, marker.size(), marker) == 0) {
    const size_t end = bytes.find('\n', at);
    if (end == std::string::npos) break;  // cut off mid-line: the case before it
    const auto digits = std::string_view(bytes).substr(at + marker.size(), end - at - marker.size());
    if (!index_digits(digits)) break;
    progress.last_started = std::stoul(std::string(digits));
    ++progress.markers;
    at = end + 1;
  }
  progress.rest_at = std::min(at, bytes.size());
  const auto rest = std::string_view(bytes).substr(progress.rest_at);
  progress.marker_cut = !rest.empty() && (rest.size() <= marker.size() ? marker.substr(0, rest.size()) == rest
                                                                        : rest.substr(0, marker.size()) == marker &&
                                                                              index_digits(rest.substr(marker.size())));
  return progress;
}

RunnerStream split_runner_stream(const std::string& bytes) {
  const auto progress = runner_progress(bytes);
  RunnerStream stream;
  stream.ready = progress.ready;
  stream.last_started = progress.last_started;
  if (progress.ready) stream.results = bytes.substr(progress.rest_at);
  return stream;
}

std::string encode(const std::vector<Record>& records) {
  Writer out;
  out.put_bytes(kMagic, sizeof(kMagic));
  out.put<uint32_t>(records.size());
  for (const auto& record : records) {
    out.put<uint32_t>(record.tensors.size() + record.ints.size() + record.reals.size() + record.strings.size());
    for (const auto& [key, tensor] : record.tensors) {
      out.put<uint8_t>(static_cast<uint8_t>(Kind::tensor));
      out.put_string(key);
      encode_tensor(out, tensor);
    }
    for (const auto& [key, value] : record.ints) {
      out.put<uint8_t>(static_cast<uint8_t>(Kind::integer));
      out.put_string(key);
      out.put<int64_t>(value);
    }
    for (const auto& [key, value] : record.reals) {
      out.put<uint8_t>(static_cast<uint8_t>(Kind::real));
      out.put_string(key);
      out.put<double>(value);
    }
    for (const auto& [key, value] : record.strings) {
      out.put<uint8_t>(static_cast<uint8_t>(Kind::string));
      out.put_string(key);
      out.put_string(value);
    }
  }
  return out.take();
}

std::vector<Record> decode(const std::string& bytes) {
  Reader in(bytes);
  if (std::memcmp(in.take(sizeof(kMagic)), kMagic, sizeof(kMagic)) != 0) throw WireError("bad message header");
  auto count = in.get<uint32_t>();
  if (count > kMaxRecords) throw WireError("too many records");
  std::vector<Record> records(count);
  for (auto& record : records) {
    auto fields = in.get<uint32_t>();
    if (fields > kMaxFields) throw WireError("too many fields in a record");
    for (uint32_t i = 0; i < fields; ++i) {
      auto kind = static_cast<Kind>(in.get<uint8_t>());
      auto key = in.get_string(kMaxKey);
      bool fresh = true;
      switch (kind) {
        case Kind::tensor:
          fresh = record.tensors.emplace(key, decode_tensor(in)).second;
          break;
        case Kind::integer:
          fresh = record.ints.emplace(key, in.get<int64_t>()).second;
          break;
        case Kind::real:
          fresh = record.reals.emplace(key, in.get<double>()).second;
          break;
        case Kind::string:
          fresh = record.strings.emplace(key, in.get_string(in.left())).second;
          break;
        default:
          throw WireError("unknown field kind");
      }
      if (!fresh) throw WireError("duplicate field '" + key + "'");
    }
  }
  if (in.left() != 0) throw WireError("trailing bytes after the message");
  return records;
}

}  // namespace grader::wire
