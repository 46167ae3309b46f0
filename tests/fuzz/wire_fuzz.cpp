// libFuzzer target: the wire decoder, which reads what the (untrusted) child
// sends, and the operator counts read back from decoded records. Anything but
// a WireError escaping, a crash, a hang or a leak is a bug; so is a decoded
// record that is not what it claims (a tensor whose data cannot be read in
// full, a dtype the channel does not carry, operator counts that disagree with
// the record's integers, a record or a reply that does not survive encode
// and decode).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "wire/trace.h"
#include "wire/messages.h"
#include "wire/wire.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "wire_fuzz: %s\n", what);
  std::abort();
}

// Reads every element, so a shape that promises more than the storage holds
// is an AddressSanitizer report here rather than later in a check.
void touch(const at::Tensor& tensor) {
  if (!tensor.defined()) return;
  if (!grader::wire::is_wire_dtype(tensor.scalar_type())) fail("decoded a dtype the wire does not carry");
  if (!tensor.is_contiguous()) fail("decoded a non-contiguous tensor");
  if (tensor.nbytes() != static_cast<size_t>(tensor.numel()) * tensor.element_size()) fail("bytes and shape disagree");
  if (tensor.numel() == 0) return;
  // sum() reads every element (bool and long sum to long, which may wrap: fine).
  auto total = tensor.sum();
  (void)total.item<double>();
  // And byte by byte, which any sanitizer sees.
  const auto* bytes = static_cast<const unsigned char*>(tensor.data_ptr());
  unsigned char any = 0;
  for (size_t i = 0; i < tensor.nbytes(); ++i) {
    any |= bytes[i];
    if (tensor.scalar_type() == at::kBool && bytes[i] > 1) fail("bool tensor with a byte other than 0 or 1");
  }
  (void)any;
}

bool same_tensor(const at::Tensor& a, const at::Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.scalar_type() == b.scalar_type() && a.sizes().equals(b.sizes()) && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}

bool same_record(const grader::wire::Record& a, const grader::wire::Record& b) {
  if (a.ints != b.ints || a.strings != b.strings || a.tensors.size() != b.tensors.size() ||
      a.reals.size() != b.reals.size()) {
    return false;
  }
  for (auto ia = a.reals.begin(), ib = b.reals.begin(); ia != a.reals.end(); ++ia, ++ib) {
    // Bit for bit: NaN payloads and the sign of zero must cross unchanged.
    if (ia->first != ib->first || std::memcmp(&ia->second, &ib->second, sizeof(double)) != 0) return false;
  }
  for (auto ia = a.tensors.begin(), ib = b.tensors.begin(); ia != a.tensors.end(); ++ia, ++ib) {
    if (ia->first != ib->first || !same_tensor(ia->second, ib->second)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);  // one core per fuzzer, as the runs are budgeted
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<grader::wire::Record> records;
  try {
    records = grader::wire::decode(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const grader::wire::WireError&) {
    return 0;
  }
  for (const auto& record : records) {
    for (const auto& [name, tensor] : record.tensors) touch(tensor);
    // The trace the grader's checks read back from any record the runner could send.
    const auto trace = grader::wire::trace_of(record);
    for (const auto& [name, count] : trace.op_counts) {
      auto found = record.ints.find("op:" + name);
      if (found == record.ints.end() || found->second != count) fail("op_counts disagrees with the record");
    }
    // Written again and read back, it is the same trace.
    grader::wire::Record rewritten;
    grader::wire::put_trace(rewritten, trace);
    const auto again = grader::wire::trace_of(rewritten);
    if (again.op_counts.size() > trace.op_counts.size() || again.device_events.size() != trace.device_events.size() ||
        again.scope_work.size() != trace.scope_work.size() || again.recording_intact != trace.recording_intact) {
      fail("a trace written again reads back differently");
    }
  }
  // As the runner's reply (wire/messages.h), the bytes read as what the
  // grader's checks see, and that reply written again reads back the same.
  try {
    const auto bytes = std::string(reinterpret_cast<const char*>(data), size);
    const auto reply = grader::wire::decode_reply(bytes);
    const auto again = grader::wire::decode_reply(grader::wire::encode_reply(reply));
    if (again.load_error != reply.load_error || again.cases.size() != reply.cases.size()) {
      fail("a reply written again reads back differently");
    }
    for (size_t i = 0; i < reply.cases.size(); ++i) {
      const auto& one = reply.cases[i];
      const auto& two = again.cases[i];
      if (one.id != two.id || one.error != two.error || one.trace.has_value() != two.trace.has_value() ||
          !same_record(one.outputs, two.outputs)) {
        fail("a reply's case written again reads back differently");
      }
    }
  } catch (const grader::wire::WireError&) {
    fail("bytes that decode as records do not decode as a reply");
  }
  // What decoded must encode and decode to the same records.
  std::vector<grader::wire::Record> again;
  try {
    again = grader::wire::decode(grader::wire::encode(records));
  } catch (const grader::wire::WireError& error) {
    std::fprintf(stderr, "wire_fuzz: re-decoding failed: %s\n", error.what());
    std::abort();
  }
  if (again.size() != records.size()) fail("round trip changed the number of records");
  for (size_t i = 0; i < records.size(); ++i) {
    if (!same_record(records[i], again[i])) fail("round trip changed a record");
  }
  return 0;
}
