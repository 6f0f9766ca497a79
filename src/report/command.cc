// `kbv report`, `kbv import`, `kbv export`.
#include "report/command.h"

#include <cctype>

#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "formats/baseline.h"
#include "formats/eval_results.h"
#include "formats/upstream.h"
#include "problem/problem.h"
#include "report/render.h"
#include "report/summary.h"
#include "report/verified.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/hash.h"

namespace kbv {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string run_name(const fs::path& dir) {
  fs::path p = dir.lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  return name.empty() || name == "." ? fs::absolute(p).filename().string() : name;
}

std::string protocol_name(const Record& record) { return record.protocol.name.value_or("kbv"); }

std::optional<int> level_for(const UpstreamFile& f, std::optional<int> level, const fs::path& dir, std::string& error) {
  if (f.level) return f.level;
  if (level) return level;
  if (auto l = infer_run_level(dir)) return l;
  error = fmt::format(
      "{}: cannot tell its level (eval_results.json does not record it, and the folder has no "
      "level_L_problem_P_sample_S_kernel.py files of a single level); pass --level L",
      f.eval_file.string());
  return std::nullopt;
}

std::vector<BaselineTimes> read_baselines(const std::vector<std::string>& args, std::string& error) {
  std::vector<BaselineTimes> out;
  for (const auto& arg : args) {
    auto [name, path] = parse_baseline_arg(arg);
    if (name != "tf32" && name != "fp32" && name != "compile") {
      error = fmt::format("--baseline-file {}: the baseline name must be tf32, fp32 or compile", arg);
      return {};
    }
    auto b = read_baseline_file(path, name, error);
    if (!b) return {};
    out.push_back(std::move(*b));
  }
  return out;
}

std::string write_output(const std::string& out, const std::string& text, const Notify& notify) {
  if (out.empty() || out == "-") {
    data(notify, text);
    return "";
  }
  return write_file_atomic(out, text);
}

}  // namespace

std::string report_format(const std::string& format, const std::string& out) {
  std::string f = format;
  if (f.empty()) {
    // From --out's extension; none (or stdout) is Markdown, one kbv does not write is refused
    // rather than filled with Markdown (report.pdf).
    std::string ext = fs::path(out).extension().string();
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    f = ext == ".html" || ext == ".htm" ? "html"
        : ext == ".csv"                 ? "csv"
        : ext == ".json"                ? "json"
        : ext.empty() || ext == ".md" || ext == ".markdown" || ext == ".txt" ? "md"
                                                                             : "";
  }
  if (f == "markdown") f = "md";
  return f == "md" || f == "html" || f == "csv" || f == "json" ? f : "";
}

std::vector<LoadedRun> load_run(const fs::path& dir, std::optional<int> level, std::vector<std::string>& warnings,
                                std::string& error) {
  if (is_queue_url(dir.string())) return load_queue(dir.string(), warnings, error);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    error = dir.string() + ": not a folder";
    return {};
  }
  const std::string name = run_name(dir);
  fs::path db = dir / "kbv.sqlite";
  if (fs::exists(db, ec)) {
    auto store = Store::open(db, error, Store::Mode::read_only);
    if (!store) return {};
    std::vector<StoredRow> rows = store->rows();
    if (rows.empty()) {
      error = db.string() + ": holds no records (evaluate with `kbv eval --run`, or `kbv import` upstream files)";
      return {};
    }
    // Rows come newest first per sample: the first one seen for a sample is its latest.
    // One run per protocol and precision: "kbv" (fp32), "kbv bf16", ...
    std::map<std::string, std::map<std::tuple<int, int, int>, Record>> latest;
    std::map<std::string, std::set<std::string>> hashes;
    std::map<std::string, std::pair<std::string, std::string>> parts;  // key -> (protocol, precision)
    for (auto& row : rows) {
      std::string precision = row.record.precision_or_default();
      std::string p = protocol_name(row.record) + (precision == "fp32" ? "" : " " + precision);
      parts[p] = {protocol_name(row.record), precision};
      hashes[p].insert(row.key.protocol_hash);
      latest[p].try_emplace({row.key.level, row.key.problem_id, row.key.sample_id}, std::move(row.record));
    }
    std::vector<LoadedRun> out;
    for (auto& [protocol, by_slot] : latest) {
      LoadedRun run;
      run.name = latest.size() > 1 ? fmt::format("{} [{}]", name, protocol) : name;
      run.dir = dir;
      run.protocol = parts[protocol].first;
      run.precision = parts[protocol].second;
      for (auto& [key, record] : by_slot) run.records.push_back(std::move(record));
      run.notes.push_back(fmt::format("{} record(s) from {}", run.records.size(), db.string()));
      if (hashes[protocol].size() > 1)
        run.notes.push_back(
            fmt::format("the store holds results of {} variants of protocol {} (knobs, torch version "
                        "or device differ); the newest record of each sample is used",
                        hashes[protocol].size(), protocol));
      out.push_back(std::move(run));
    }
    return out;
  }

  std::vector<UpstreamFile> files = find_upstream_files(dir);
  if (files.empty()) {
    error = fmt::format(
        "{}: no kbv.sqlite and no eval_results.json: nothing to report (evaluate with "
        "`kbv eval --problems DIR --run {}`, or point at a KernelBench run folder)",
        dir.string(), dir.string());
    return {};
  }
  LoadedRun run;
  run.name = name;
  run.dir = dir;
  run.protocol = kImportProtocol;
  for (const auto& f : files) {
    auto l = level_for(f, level, dir, error);
    if (!l) return {};
    UpstreamRead read = read_eval_results(f.eval_file, f.hidden_file, *l, dir);
    if (!read.error.empty()) {
      error = read.error;
      return {};
    }
    warnings.insert(warnings.end(), read.warnings.begin(), read.warnings.end());
    run.notes.push_back(
        fmt::format("{} record(s) read from {} ({} format, level {}{}) without storing them; "
                    "`kbv import` stores them",
                    read.records.size(), f.eval_file.string(), read.format, *l,
                    f.hidden_file ? ", hidden results from " + f.hidden_file->string() : ""));
    for (auto& r : read.records) run.records.push_back(std::move(r));
  }
  return {std::move(run)};
}

Outcome report_command(const ReportOptions& options, const Notify& notify) {
  const std::string format = report_format(options.format, options.out);
  if (format.empty())
    return Outcome::fail(Status::input_error,
                         options.format.empty()
                             ? fmt::format("--out {}: kbv writes .md, .html, .csv or .json reports (or give --format)",
                                           options.out)
                             : fmt::format("--format {}: use md, html, csv or json", options.format));
  const std::optional<FastPMode> fast_p_mode = parse_fast_p_mode(options.fast_p);
  if (!fast_p_mode)
    return Outcome::fail(Status::input_error,
                         fmt::format("--fast-p {}: use interval (a sample counts when its speedup's 95% interval "
                                     "clears p) or point (KernelBench's definition)",
                                     options.fast_p));
  std::string error;
  std::vector<BaselineTimes> baselines = read_baselines(options.baseline_files, error);
  if (!error.empty()) return Outcome::fail(Status::input_error, error);
  ReportInput input;
  input.baseline = options.baseline;
  std::vector<ProblemSlot> problems;
  if (options.problems_dir) {
    Discovery d = discover_dataset(*options.problems_dir);
    if (!d.error.empty()) return Outcome::fail(Status::input_error, d.error);
    for (const auto& w : d.warnings) warn(notify, w);
    for (const auto& p : d.problems) problems.push_back({p.level, p.id, p.name});
    input.notes.push_back(fmt::format("problems: {} from {}", problems.size(), options.problems_dir->string()));
  }
  for (const auto& b : baselines)
    input.notes.push_back(fmt::format("baseline file for imported runs: {} = {} ({} problems, measured: {})", b.name,
                                      b.path.string(), b.entries.size(), b.label));
  if (options.table != "auto" && options.table != "verified" && options.table != "kbv")
    return Outcome::fail(Status::input_error,
                         fmt::format("--table {}: use auto, verified (KernelBench-Verified's table shape and "
                                     "denominator) or kbv",
                                     options.table));
  std::vector<Exclusion> lint_exclusions;
  for (const auto& file : options.exclude_from) {
    FileText t = read_file(file);
    if (!t.ok) return Outcome::fail(Status::input_error, "--exclude-from " + t.error);
    json j = json::parse(t.text, nullptr, false);
    if (j.is_discarded())
      return Outcome::fail(Status::input_error,
                           fmt::format("--exclude-from {}: not valid JSON (write it with `kbv lint-problems DIR --json "
                                       "FILE`)",
                                       file.string()));
    std::vector<Exclusion> found = exclusions_from_lint(j, file.string(), error);
    if (!error.empty()) return Outcome::fail(Status::input_error, "--exclude-from " + error);
    input.notes.push_back(fmt::format("--exclude-from {}: {} unsolvable or degenerate problem(s) leave the denominator",
                                      file.string(), found.size()));
    merge_exclusions(lint_exclusions, found);
  }

  std::vector<std::pair<fs::path, LoadedRun>> all_loaded;
  for (const auto& dir : options.runs) {
    std::vector<std::string> warnings;
    std::vector<LoadedRun> loaded = load_run(dir, options.level, warnings, error);
    for (const auto& w : warnings) warn(notify, w);
    if (!error.empty()) return Outcome::fail(Status::input_error, error);
    for (auto& run : loaded) {
      if (!options.precision.empty() && run.precision != options.precision) continue;
      all_loaded.emplace_back(dir, std::move(run));
    }
  }
  bool every_verified = !all_loaded.empty();
  for (const auto& [dir, run] : all_loaded) every_verified = every_verified && is_verified_protocol(run.protocol);
  input.verified_tables = options.table == "verified" || (options.table == "auto" && every_verified);
  if (input.verified_tables && options.table == "auto")
    input.notes.push_back(fmt::format("every run is under protocol {}: its table shape on top (kbv report --table kbv "
                                      "leaves it out)",
                                      kVerifiedProtocolName));

  std::set<std::string> names;
  for (auto& [dir, run] : all_loaded) {
    if (run.protocol == kImportProtocol)
      for (const auto& b : baselines) {
        int timed = 0;
        for (auto& r : run.records) {
          apply_baseline(r, b);
          timed += r.timing && r.timing->speedup && r.timing->speedup->count(b.name);
        }
        run.notes.push_back(fmt::format("{} of {} record(s) have a speedup against the {} baseline file {}", timed,
                                        run.records.size(), b.name, b.path.string()));
      }
    std::string name = names.count(run.name) ? fmt::format("{} ({})", run.name, shown_input(dir)) : run.name;
    names.insert(name);
    // The denominator: the lint's exclusions, and under KernelBench-Verified's table or protocol its own.
    std::vector<Exclusion> exclusions = lint_exclusions;
    if (input.verified_tables || is_verified_protocol(run.protocol))
      merge_exclusions(exclusions, verified_protocol_exclusions());
    RunSummary summary = summarize(name, run.records, problems, options.baseline, *fast_p_mode, exclusions);
    summary.notes.insert(summary.notes.begin(), run.notes.begin(), run.notes.end());
    if (summary.protocol.empty()) summary.protocol = run.protocol;
    summary.precision = run.precision;
    summary.model = shown_input(dir);
    summary.generation = read_generation(dir);
    for (const auto& u : summary.generation.unreadable)
      summary.notes.push_back("generation record not read: " + u);
    input.runs.push_back(std::move(summary));
  }

  if (input.runs.empty() && !options.precision.empty())
    return Outcome::fail(Status::input_error,
                         fmt::format("no results of precision {} in the given run folder(s) (evaluate with "
                                     "`kbv eval --run DIR --precision {}`)",
                                     options.precision, options.precision));
  std::string text;
  if (format == "md")
    text = render_markdown(input);
  else if (format == "html")
    text = render_html(input);
  else if (format == "csv")
    text = render_csv(input);
  else
    text = render_json(input).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  if (std::string e = write_output(options.out, text, notify); !e.empty()) return Outcome::fail(Status::input_error, e);
  if (!options.out.empty() && options.out != "-")
    info(notify, fmt::format("{} run(s) -> {} ({})", input.runs.size(), options.out, format));
  return Outcome::done();
}

Outcome import_command(const ImportOptions& options, const Notify& notify) {
  const fs::path into = options.into.value_or(options.from);
  std::vector<UpstreamFile> files = find_upstream_files(options.from);
  if (files.empty())
    return Outcome::fail(Status::input_error, fmt::format("{}: no eval_results.json (nor eval_results_level<L>.json) "
                                                          "to import",
                                                          options.from.string()));
  std::string error;
  std::vector<BaselineTimes> baselines = read_baselines(options.baseline_files, error);
  if (!error.empty()) return Outcome::fail(Status::input_error, error);
  std::error_code ec;
  fs::create_directories(into, ec);
  auto store = Store::open(into / "kbv.sqlite", error);
  if (!store) return Outcome::fail(Status::input_error, error);
  for (const auto& row : store->rows())
    if (protocol_name(row.record) != kImportProtocol)
      return Outcome::fail(Status::input_error,
                           fmt::format("{} holds kbv's own results (protocol {}); its eval_results.json is kbv's "
                                       "output. Import into another folder: --into DIR",
                                       (into / "kbv.sqlite").string(), protocol_name(row.record)));
  std::string baseline_hashes;
  for (const auto& b : baselines) {
    FileText t = read_file(b.path);
    baseline_hashes += b.name + ":" + sha256_hex(t.text) + ";";
    info(notify, fmt::format("baseline {} from {}: measured {}", b.name, b.path.string(), b.label));
  }
  int total = 0;
  for (const auto& f : files) {
    auto level = level_for(f, options.level, options.from, error);
    if (!level) return Outcome::fail(Status::input_error, error);
    UpstreamRead read = read_eval_results(f.eval_file, f.hidden_file, *level, options.from);
    if (!read.error.empty()) return Outcome::fail(Status::input_error, read.error);
    for (const auto& w : read.warnings) warn(notify, w);
    FileText eval_text = read_file(f.eval_file);
    FileText hidden_text = f.hidden_file ? read_file(*f.hidden_file) : FileText{};
    const std::string phash = sha256_hex_parts(
        {kImportProtocol, read.format, sha256_hex(eval_text.text), sha256_hex(hidden_text.text), baseline_hashes});
    std::map<std::string, int> applied;
    for (auto& r : read.records) {
      for (const auto& b : baselines) {
        apply_baseline(r, b);  // may add only a memory ratio: what counts is a speedup
        applied[b.name] += r.timing && r.timing->speedup && r.timing->speedup->count(b.name) ? 1 : 0;
      }
      RecordKey key{r.level, r.problem_id, r.sample_id,
                    r.solution_hash.value_or(sha256_hex(to_json(*r.kernelbench).dump())), phash};
      if (std::string e = store->put(key, r); !e.empty()) return Outcome::fail(Status::input_error, e);
    }
    total += static_cast<int>(read.records.size());
    std::string speed;
    for (const auto& [name, n] : applied) speed += fmt::format("; {} record(s) with a {} speedup", n, name);
    info(notify, fmt::format("{} record(s) from {} ({}, level {}{}){}", read.records.size(), f.eval_file.string(),
                             read.format, *level,
                             f.hidden_file ? ", hidden: " + f.hidden_file->filename().string() : ", no hidden results",
                             speed));
  }
  info(notify, fmt::format("{} record(s) stored in {} (protocol {})", total, (into / "kbv.sqlite").string(),
                           kImportProtocol));
  return Outcome::done();
}

Outcome export_command(const ExportOptions& options, const Notify& notify) {
  if (options.format != "verified" && options.format != "kernelbench")
    return Outcome::fail(Status::input_error, fmt::format("--format {}: use verified or kernelbench", options.format));
  std::error_code ec;
  if (!fs::exists(options.run / "kbv.sqlite", ec))
    return Outcome::fail(Status::input_error, options.run.string() + ": no kbv.sqlite to export");
  std::vector<std::string> warnings;
  std::string error;
  std::vector<LoadedRun> runs = load_run(options.run, std::nullopt, warnings, error);
  if (!error.empty()) return Outcome::fail(Status::input_error, error);
  // kbv's own protocol first, when the store holds several.
  const LoadedRun* run = &runs.front();
  for (const auto& r : runs)
    if (r.protocol == "kbv" && (run->protocol != "kbv" || r.precision == "fp32")) run = &r;  // fp32 first
  if (runs.size() > 1)
    info(notify, fmt::format("the store holds {} protocols; exporting {} ({})", runs.size(), run->protocol,
                             run->precision));
  const fs::path to = options.to.value_or(options.run / ("export-" + options.format));
  fs::create_directories(to, ec);
  std::map<int, std::vector<Record>> by_level;
  for (const auto& r : run->records) by_level[r.level].push_back(r);
  const bool several = by_level.size() > 1;
  auto name = [&](const char* stem, int level) {
    return several ? fmt::format("{}_level{}.json", stem, level) : fmt::format("{}.json", stem);
  };
  for (const auto& [level, records] : by_level) {
    std::vector<std::pair<fs::path, std::string>> files;
    if (options.format == "kernelbench") {
      files.push_back({to / name("eval_results", level), kernelbench_eval_results(records).dump(4) + "\n"});
    } else {
      files.push_back({to / name("eval_results", level), verified_eval_results(records, false).dump(4) + "\n"});
      auto hidden = verified_eval_results(records, true);
      if (!hidden.empty()) files.push_back({to / name("eval_results_hidden", level), hidden.dump(4) + "\n"});
    }
    for (const auto& [path, text] : files) {
      if (std::string e = write_file_atomic(path, text); !e.empty()) return Outcome::fail(Status::input_error, e);
      info(notify, fmt::format("level {}: {} record(s) -> {}", level, records.size(), path.string()));
    }
  }
  return Outcome::done();
}

}  // namespace kbv
