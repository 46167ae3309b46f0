// libFuzzer target: the wire decoder, which reads what the (untrusted) child
// sends, and the operator counts read back from decoded records. Anything but
// a WireError escaping, a crash, a hang or a leak is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runner/op_recorder.h"
#include "wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto records = grader::wire::decode(std::string(reinterpret_cast<const char*>(data), size));
    for (const auto& record : records) {
      long total = 0;
      for (const auto& [name, count] : grader::op_counts(record)) total += count + static_cast<long>(name.size());
      for (const auto& [name, tensor] : record.tensors) total += tensor.numel() + tensor.dim();
      (void)total;
    }
  } catch (const grader::wire::WireError&) {
  }
  return 0;
}
