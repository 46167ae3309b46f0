#include "wire/messages.h"

#include <set>
#include <utility>

namespace grader::wire {

namespace {

// The envelope's keys in a record.
const std::string kCase = "case", kSeed = "seed", kKind = "kind", kDevice = "device";
const std::string kError = "error", kErrorFrames = "error_frames", kLoadError = "load_error";

}  // namespace

CaseRequest CaseRequest::of(Record planned) {
  CaseRequest request;
  request.id = planned.string(kCase);
  request.seed = planned.integer(kSeed);
  request.kind = planned.string_or(kKind, "");
  request.device = planned.string_or(kDevice, "cpu");
  planned.strings.erase(kCase);
  planned.ints.erase(kSeed);
  planned.strings.erase(kKind);
  planned.strings.erase(kDevice);
  request.fields = std::move(planned);
  return request;
}

Record CaseRequest::driver_record() const {
  Record record = fields;
  record.strings[kCase] = id;
  record.ints[kSeed] = seed;
  if (!kind.empty()) record.strings[kKind] = kind;
  record.strings[kDevice] = device;
  return record;
}

std::string encode_requests(const std::vector<CaseRequest>& requests) {
  std::vector<Record> records;
  records.reserve(requests.size());
  for (const auto& request : requests) records.push_back(request.driver_record());
  return encode(records);
}

std::vector<CaseRequest> decode_requests(const std::string& bytes) {
  std::vector<CaseRequest> requests;
  std::set<std::string> ids;
  for (auto& record : decode(bytes)) {
    requests.push_back(CaseRequest::of(std::move(record)));
    if (!ids.insert(requests.back().id).second) throw WireError("two cases named '" + requests.back().id + "'");
  }
  return requests;
}

std::string encode_reply(const Reply& reply) {
  std::vector<Record> records;
  if (reply.load_error) {
    Record failure;
    failure.strings[kLoadError] = *reply.load_error;
    records.push_back(std::move(failure));
    return encode(records);
  }
  for (const auto& answer : reply.cases) {
    Record record = answer.outputs;
    record.strings[kCase] = answer.id;
    if (answer.error) record.strings[kError] = *answer.error;
    if (answer.error_frames) record.strings[kErrorFrames] = *answer.error_frames;
    if (answer.trace) put_trace(record, *answer.trace);
    records.push_back(std::move(record));
  }
  return encode(records);
}

Reply decode_reply(const std::string& bytes) {
  auto records = decode(bytes);
  Reply reply;
  if (records.size() == 1 && records.front().strings.count(kLoadError)) {
    reply.load_error = records.front().strings.at(kLoadError);
    return reply;
  }
  for (auto& record : records) {
    CaseReply answer;
    answer.id = record.string_or(kCase, "");
    if (auto found = record.strings.find(kError); found != record.strings.end()) answer.error = found->second;
    if (auto found = record.strings.find(kErrorFrames); found != record.strings.end()) answer.error_frames = found->second;
    record.strings.erase(kCase);
    record.strings.erase(kError);
    record.strings.erase(kErrorFrames);
    answer.trace = take_trace(record);
    answer.outputs = std::move(record);
    reply.cases.push_back(std::move(answer));
  }
  return reply;
}

}  // namespace grader::wire
