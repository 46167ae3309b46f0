// The names of a case's fields on the wire, in one place: what the grader
// sends (inputs, parameters, constructor arguments, dimensions) and the
// gradients the runner sends back. Header-only: the exercise drivers, linked
// into a learner's shared object, use it too.
#pragma once

#include <optional>
#include <string>

namespace grader::wire::key {

// A forward input by its signature name ("query" -> "input.query").
inline std::string input(const std::string& name) { return "input." + name; }
// A parameter by its name in the module ("q_linear.weight").
inline std::string param(const std::string& name) { return "param." + name; }
// A constructor argument ("d_model"): a real, and an integer where whole.
inline std::string ctor(const std::string& name) { return "ctor." + name; }
// A free function's integer argument ("key_offset"), from the case's dimensions.
inline std::string arg(const std::string& name) { return "arg." + name; }
// A dimension of the case ("D").
inline std::string dim(const std::string& name) { return "dim." + name; }
// The gradient of an input or a parameter, as the runner sends it back.
inline std::string grad_input(const std::string& name) { return "grad.input." + name; }
inline std::string grad_param(const std::string& name) { return "grad.param." + name; }

// The name inside a key of one of these kinds, or nothing when `key` is not one.
inline std::optional<std::string> name_in(const std::string& key, const std::string& prefix) {
  if (key.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return key.substr(prefix.size());
}
inline std::optional<std::string> input_name(const std::string& key) { return name_in(key, "input."); }
inline std::optional<std::string> param_name(const std::string& key) { return name_in(key, "param."); }
inline std::optional<std::string> ctor_name(const std::string& key) { return name_in(key, "ctor."); }
inline std::optional<std::string> dim_name(const std::string& key) { return name_in(key, "dim."); }
inline std::optional<std::string> arg_name(const std::string& key) { return name_in(key, "arg."); }

}  // namespace grader::wire::key
