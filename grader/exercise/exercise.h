// An exercise as described by exercises/<id>/exercise.yaml.
#pragma once

#include <filesystem>
#include <optional>
#include <map>
#include <string>
#include <vector>

namespace grader {

struct FocusPoint {
  std::string id;
  std::string title;
  std::string explanation;         // what an interviewer expects to hear: the last hint
  std::vector<std::string> hints;  // `grade hint`, least detail first (optional)
  // Phrases that state this point's answer: none may appear in the statement's
  // task and interface or in the interface header (tests/statement_test.cpp).
  std::vector<std::string> giveaways;
  bool shared = false;             // defined once in exercises/shared.yaml (`- shared: <id>`)
};

struct CheckSpec {
  std::string id;
  std::string focus_point;
  std::vector<std::string> covers;  // further focus points a pass vouches for
  std::string title;
  std::string kind;                            // which kit check runs it (default: the id)
  std::vector<std::string> cases;              // the cases it judges, by id (kit checks)
  double weight = 1;                           // its share of the score (`weight:`, default 1)
  // `informational: true`: a measurement shown beside the grade (a bandwidth)
  // that is outside the score and never decides a verdict or a focus point.
  bool informational = false;
  // `visibility:` Gradescope's for this check's test (visible, hidden, after_due_date,
  // after_published); empty: the grade's (--visibility).
  std::string visibility;
  // further scalars; a mapping's entries as "key.sub". Any check may say
  // judged_alone: "true": it never compares outputs with the reference's (it
  // compares a training run with the same code's eval run, or reads what the
  // module registers), so a known mistake elsewhere never sets it aside.
  std::map<std::string, std::string> options;
  std::string option(const std::string& key, const std::string& fallback = "") const {
    auto found = options.find(key);
    return found == options.end() ? fallback : found->second;
  }
};

// A tensor of the signature: its symbolic shape ("B", "Nq", "D", "D/H", "4*D")
// and how the grader fills it: randn, attention_mask (a mask whose layout
// each case picks, see CaseSpec; a (B, N) shape gets padding masks as (B, N)),
// or tokens (int64 ids drawn uniformly below the expression `below`, "V").
// A parameter name may hold one "{X}", X a dimension: the name stands for X
// parameters, with {X} replaced by 0 .. X-1 ("layers.{L}.linear1.weight").
struct TensorSpec {
  std::string name;
  std::vector<std::string> shape;
  std::string kind = "randn";
  std::string below;  // tokens: the exclusive upper bound of the ids
};

// What the learner's module (or function) takes and returns, from `signature:`.
struct Signature {
  std::vector<std::pair<std::string, std::string>> constructor;  // argument -> expression ("D", "H", "0.1")
  // A function's integer arguments beside its tensors (argument -> dimension
  // expression: "query_offset: P"); the driver reads them with Inputs::argument.
  std::vector<std::pair<std::string, std::string>> arguments;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<TensorSpec> parameters;  // loaded into the module by name
};

// One planned configuration from `cases:`: integer entries are dimensions,
// text entries are traits (dtype: float64|float32|bfloat16|float16, the narrow
// ones with their own entry in `tolerances:`; mode: eval|train, mask:
// none|padding|causal|per_head|heads_shared, mask_dtype: bool|int64).
struct CaseSpec {
  std::string id;
  std::map<std::string, int64_t> dims;
  std::map<std::string, std::string> traits;
  std::string trait(const std::string& key, const std::string& fallback) const {
    auto found = traits.find(key);
    return found == traits.end() ? fallback : found->second;
  }
};

// A property of cases ("Nq != Nk", "mask == none"): when the failing cases
// are exactly those that have it, the failure is attributed to it.
struct FeatureSpec {
  std::string id;
  std::string when;
  std::string focus_point;
  std::string says;
  std::string mistake;  // a known mistake this names, if any
};

// An error message from learner code that names a concept ("view size is not
// compatible" after a transpose is a missing contiguous()).
struct ErrorRule {
  std::string contains;
  std::string focus_point;
  std::string says;
  std::string mistake;  // a known mistake this names, if any
};

struct Mistake {
  std::string id;
  std::string focus_point;
  std::string title;
  std::string explanation;
};

// `isolate:` (kit exercises with parameters): the module's parts, each
// switched off through its weights (a zero output projection, identity
// projections), so that an unexplained difference can be placed in one part
// (grader/checks/kit/isolation.h). Settings map a signature parameter (its
// {X} templates too) to zero, one or identity.
struct PartSpec {
  std::string id;
  std::string says;  // what it is, as a report names it ("the self-attention sub-layer")
  std::vector<std::pair<std::string, std::string>> off;    // switch the part off
  std::vector<std::pair<std::string, std::string>> blind;  // keep it on, but blind to its input (optional)
  std::string focus_point;  // named for a difference inside it (needs blind)
};
struct Isolation {
  std::string rest;  // what stays with every part off ("the residual sums and the LayerNorms")
  std::vector<PartSpec> parts;
};

// A variant of the reference that is no mistake (`tolerated:`): a constant
// rounded to float32, say. A float64 case matches when it matches the reference
// or one of these at float64 precision (tolerances.exact).
struct TolerableVariant {
  std::string id;
  std::string title;
};

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

// Limits for one kind of child process: the compiler, or the run of learner code.
struct StepLimits {
  double seconds = 0;      // wall clock, measured by the grader
  double cpu_seconds = 0;  // CPU time of all its threads and processes
  double memory_mb = 0;    // memory (cgroup)
  int processes = 0;       // processes and threads together (cgroup)
  double output_kb = 0;    // each of stdout and stderr
};

struct Limits {
  StepLimits compile{120, 120, 2048, 16, 512};
  StepLimits run{30, 30, 1024, 32, 1024};
};

// `speed:`: what a grade on a GPU times once every check has passed, for
// information (grader/report/speed.h): the learner's forward at each size against
// the same attention in plain LibTorch operations and LibTorch's fused
// scaled_dot_product_attention. No sizes: the exercise is not timed.
struct SpeedSpec {
  std::string baseline;   // "attention": inputs query, key, value (B, H, N, d); "self_attention": one input (B, N, D)
  std::string heads;      // self_attention: the number of heads, an expression over a size's dims ("H")
  bool causal = false;    // the baselines hide each query's later keys, as the exercise does
  std::vector<std::map<std::string, int64_t>> sizes;  // dims, as a case gives them; float32 throughout
};

struct Exercise {
  std::string id;
  std::string title;
  int order = 1000;  // place in the learning order (`order:`; `grade list` sorts by it)
  std::string difficulty;  // `difficulty:` easy, medium or hard (grade list); empty: not said
  int minutes = 0;         // `minutes:` the time an interview would give it (grade list); 0: not said
  std::filesystem::path dir;
  std::string definition;  // the text of exercise.yaml (the default seed depends on it)
  std::vector<std::string> learner_files;
  std::string interface_header;
  Limits limits;
  // By dtype name: float32, float64 (and narrow ones cases use), and `exact`:
  // what a float64 case must meet to pass (float64's entry explains and replays).
  std::map<std::string, Tolerance> tolerances;
  std::vector<std::string> forbidden_operators;
  std::vector<std::string> forbidden_symbols;
  std::vector<FocusPoint> focus_points;
  std::vector<CheckSpec> checks;
  std::vector<Mistake> mistakes;
  std::vector<TolerableVariant> tolerated;
  Signature signature;
  std::vector<CaseSpec> cases;
  std::vector<FeatureSpec> features;
  std::vector<ErrorRule> error_rules;
  Isolation isolation;
  SpeedSpec speed;

  const CaseSpec& case_spec(const std::string& id) const;
  const FocusPoint& focus_point(const std::string& id) const;
  const CheckSpec& check(const std::string& id) const;
  const Mistake& mistake(const std::string& id) const;
  const Tolerance& tolerance(const std::string& dtype) const;
  // A CUDA exercise (its learner file is .cu): only its compile runs without a GPU.
  bool gpu_only() const;
  // Whether `check` can only be assessed where a GPU runs the learner's code.
  bool needs_gpu(const CheckSpec& check) const;
  // The score a full answer earns on a grade with or without a GPU: the
  // weights of the checks that can run there, informational ones left out.
  double max_score(bool on_gpu) const;
  std::filesystem::path learner_file() const { return dir / learner_files.front(); }
};

// Throws ConfigError with the file and the problem for a malformed exercise.yaml.
Exercise load_exercise(const std::filesystem::path& dir);
// The same from the text of an exercise.yaml said to lie in `dir` (the fuzzer's entry).
Exercise parse_exercise(const std::string& yaml_text, const std::filesystem::path& dir);

// Exercise ids under exercises_root (folders holding an exercise.yaml), sorted.
// Whether `text` is the starter of the exercise's learner file `name`, byte for
// byte (exercises/<id>/.starter/<name>, which `grade reset` restores), its
// blank form, or, where `path` is given, the interview's copy written there.
bool is_starter(const Exercise& exercise, const std::string& name, const std::string& text,
                const std::optional<std::filesystem::path>& path = std::nullopt);
// The blank starter of a guided one: the same file without the comment lines
// after its opening heading (the steps and pitfalls, inside the functions or
// before them), for practice without the answer in view. The heading, the
// includes, the signatures and every line of code stay as they are (a comment
// at the end of a code line too).
std::string blank_starter(const std::string& guided);
// An interview's copy of a starter, to be written at `attempt`: the blank
// starter whose opening line and "not implemented yet" messages name that
// file and how it is graded, not the learner's own file in exercises/.
std::string interview_starter(const Exercise& exercise, const std::string& blank, const std::filesystem::path& attempt);
// The inverse, for an attempt kept as the learner's own file: what names the
// interview's copy names the learner's file again (the rest as written).
std::string own_from_interview(const Exercise& exercise, const std::string& text, const std::filesystem::path& attempt);

std::vector<std::string> list_exercises(const std::filesystem::path& exercises_root);
// Every exercise under exercises_root, loaded, in learning order (`order:`).
std::vector<Exercise> load_exercises_in_order(const std::filesystem::path& exercises_root);

// Throws UsageError naming the closest existing exercise when `id` is unknown.
std::filesystem::path find_exercise_dir(const std::filesystem::path& exercises_root, const std::string& id);

}  // namespace grader
