// Prompts for `kbv generate`: KernelBench's single-turn prompt, rendered from template files a
// user can edit (prompts/ in the source tree, or --prompts DIR).
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbv {

struct PromptOptions {
  std::filesystem::path dir;            // the template folder
  std::string variant = "one_shot";     // zero_shot | one_shot | few_shot
  std::string precision = "fp32";       // fp32 | bf16 | fp16 (kbv eval --precision, docs/PRECISION.md)
  std::string hardware;                 // a key of hardware.json, empty: no hardware block
  bool input_blind_all = false;         // every problem input-blind, marked or not
  std::string device = "cuda";          // cuda | cpu: cpu asks for C++ CPU kernels (templates of cpu/)
};

// The template files one variant needs, read once. `hash` covers every file used, so that a
// sample records exactly which templates made its prompt.
struct PromptTemplates {
  PromptOptions options;
  std::map<std::string, std::string> files;  // name relative to dir -> text
  std::map<std::string, std::string> names;  // the template's role ("one_shot.md") -> its name in files ("cpu/one_shot.md")
  std::vector<std::pair<std::string, std::string>> examples;  // (reference, solution) texts
  std::string hardware_name;                 // the GPU's display name, when a block is wanted
  std::string hardware_specs;                // "- Memory: 141 GB HBM3e\n- ..."
  std::string hash;                          // sha256 over the files used
};

// Reads the templates of `options.variant` (and its examples, precision note, hardware block).
// Returns std::nullopt with `error` naming the file that is missing or malformed.
std::optional<PromptTemplates> load_prompt_templates(const PromptOptions& options, std::string& error);

struct Prompt {
  std::string text;
  std::string hash;          // sha256 of text
  bool input_blind = false;  // the problem was sent without get_inputs and size constants
};

// The prompt for one problem file's source. `error` names the template and line of a
// placeholder that has no value.
std::optional<Prompt> render_prompt(const PromptTemplates& templates, std::string_view problem_source,
                                    std::string& error);

// "{{name}}" replaced by vars[name] (name: a letter or '_', then letters, digits, '_'). Anything
// else between braces is left as is, so code in a template needs no escaping. An unknown name
// is an error naming `origin` and the line.
std::optional<std::string> fill_template(std::string_view text, const std::map<std::string, std::string>& vars,
                                         const std::string& origin, std::string& error);

// A problem marked input-blind has a top-level line `KBV_INPUT_BLIND = True`.
bool marked_input_blind(std::string_view problem_source);

// The problem's source as sent to the model: kbv's own KBV_* settings (and the comment lines
// just above them) removed; when `input_blind`, also get_inputs, get_init_inputs and the
// top-level assignments (the size constants), so only imports, classes and helper functions
// remain. A constant that the kept code reads itself (a class using a module global) is kept,
// so that what is sent stays valid Python.
std::string problem_for_prompt(std::string_view problem_source, bool input_blind);

}  // namespace kbv
