// The grader's own JSON report (schema_version kJsonSchemaVersion).
#include <nlohmann/json.hpp>

#include "report/formats.h"

namespace grader {

std::string render_json(const GradeReport& report) {
  nlohmann::ordered_json json;
  json["schema_version"] = kJsonSchemaVersion;
  json["exercise"] = report.exercise;
  json["submission"] = report.submission;
  json["verdict"] = verdict_name(report.verdict);
  json["summary"] = report.summary;
  json["seed"] = report.seed;
  json["sandbox"] = report.sandbox;
  json["device"] = report.device;
  json["gpu_verified"] = report.device == "cuda";
  if (report.device != "cuda") json["no_gpu"] = report.no_gpu;
  json["checks"] = nlohmann::ordered_json::array();
  for (const auto& check : report.checks) {
    nlohmann::ordered_json item;
    item["id"] = check.id;
    item["focus_point"] = check.focus_point;
    item["status"] = check_status_name(check.status);
    item["message"] = check.message;
    item["evidence"] = check.evidence;
    if (!check.mistake.empty()) item["mistake"] = check.mistake;
    if (check.partly_assessed) item["partly_assessed"] = true;
    if (check.gpu_confirmation) item["gpu_confirmation"] = true;
    if (!check.also_against.empty()) item["also_against"] = check.also_against;
    if (!check.also_mistakes.empty()) item["also_mistakes"] = check.also_mistakes;
    if (!check.blames_focus) item["blames_focus"] = false;
    if (check.needs_gpu) item["needs_gpu"] = true;
    if (check.informational) item["informational"] = true;
    json["checks"].push_back(item);
  }
  json["focus_points"] = nlohmann::ordered_json::array();
  for (const auto& focus : report.focus_points) {
    json["focus_points"].push_back(
        {{"id", focus.point.id}, {"title", focus.point.title}, {"status", focus_status_name(focus.status)}});
  }
  json["starter"] = report.starter;
  json["compiler_output"] = report.compiler_output;
  json["stdout"] = report.program_stdout;
  json["stderr"] = report.program_stderr;
  json["score"] = report.score();
  json["max_score"] = report.max_score;
  json["timing"] = {{"compile_seconds", report.compile_seconds},
                    {"compile_cached", report.compile_cached},
                    {"compile_ahead", report.compile_ahead},
                    {"run_seconds", report.run_seconds},
                    {"waited_for_cpu_seconds", report.runner_waited_seconds},
                    {"runner_forked", report.runner_forked},
                    {"total_seconds", report.total_seconds}};
  if (report.command_seconds > 0) json["timing"]["command_seconds"] = report.command_seconds;
  if (!report.compile_note.empty()) json["timing"]["compile_note"] = report.compile_note;
  if (report.speed.ran || !report.speed.note.empty()) {
    const auto& speed = report.speed;
    nlohmann::ordered_json item;
    item["ran"] = speed.ran;
    item["note"] = speed.note;
    if (speed.ran) {
      item["device_name"] = speed.device_name;
      item["method"] = speed.method;
      item["copy_gb_s"] = speed.copy_gb_s;
      item["matmul_tflops"] = speed.matmul_tflops;
      item["suspicious"] = speed.suspicious();
      item["sizes"] = nlohmann::ordered_json::array();
      for (const auto& row : speed.rows) {
        nlohmann::ordered_json size = {{"size", row.size}};
        if (!row.error.empty()) size["error"] = row.error;
        if (!row.baseline_error.empty()) size["baseline_error"] = row.baseline_error;
        size["learner_ms"] = row.learner_ms;
        size["unfused_ms"] = row.unfused_ms;
        size["fused_ms"] = row.fused_ms;
        if (row.learner_ms > 0 && row.unfused_ms > 0) size["ratio_to_unfused"] = row.learner_ms / row.unfused_ms;
        if (row.learner_ms > 0 && row.fused_ms > 0) size["ratio_to_fused"] = row.learner_ms / row.fused_ms;
        size["attention_matrix_mb"] = row.attention_matrix_mb;
        size["learner_peak_mb"] = row.learner_peak_mb;
        size["unfused_peak_mb"] = row.unfused_peak_mb;
        size["fused_peak_mb"] = row.fused_peak_mb;
        size["flags"] = row.flags;
        item["sizes"].push_back(size);
      }
    }
    json["speed"] = item;
  }
  // Learner output may hold invalid UTF-8: replace it rather than fail.
  return json.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string render_json_error(const std::string& exercise, const std::string& verdict, const std::string& message) {
  nlohmann::ordered_json json = {{"schema_version", kJsonSchemaVersion},
                                 {"exercise", exercise},
                                 {"verdict", verdict},
                                 {"summary", message},
                                 {"checks", nlohmann::ordered_json::array()},
                                 {"focus_points", nlohmann::ordered_json::array()}};
  return json.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace grader
