#include "hub/model_card.h"

#include <cstdio>
#include <map>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/python_float.h"

namespace loom::hub {
namespace {

// transformers' TASK_TAG_TO_NAME_MAPPING and METRIC_TAGS.
const std::map<std::string, std::string>& TaskNames() {
  static const auto* names = new std::map<std::string, std::string>{
      {"fill-mask", "Masked Language Modeling"},
      {"image-classification", "Image Classification"},
      {"image-segmentation", "Image Segmentation"},
      {"multiple-choice", "Multiple Choice"},
      {"object-detection", "Object Detection"},
      {"question-answering", "Question Answering"},
      {"summarization", "Summarization"},
      {"table-question-answering", "Table Question Answering"},
      {"text-classification", "Text Classification"},
      {"text-generation", "Causal Language Modeling"},
      {"text2text-generation", "Sequence-to-sequence Language Modeling"},
      {"token-classification", "Token Classification"},
      {"translation", "Translation"},
      {"zero-shot-classification", "Zero Shot Classification"},
      {"automatic-speech-recognition", "Automatic Speech Recognition"},
      {"audio-classification", "Audio Classification"},
  };
  return *names;
}

bool IsMetricTag(const std::string& tag) {
  static const char* const kTags[] = {"accuracy",  "bleu",      "f1",     "matthews_correlation",
                                      "pearsonr",  "precision", "recall", "rouge",
                                      "sacrebleu", "spearmanr", "wer"};
  for (const char* t : kTags) {
    if (tag == t) return true;
  }
  return false;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// " ".join(part.capitalize() for part in key.split("_")).
std::string TitleCase(const std::string& key) {
  std::vector<std::string> parts = absl::StrSplit(key, '_');
  for (std::string& p : parts) {
    p = Lower(p);
    if (!p.empty()) p[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(p[0])));
  }
  return absl::StrJoin(parts, " ");
}

// infer_metric_tags_from_eval_results: metric tag -> result name, in the results' order.
std::vector<std::pair<std::string, std::string>> MetricMapping(
    const std::optional<OrderedJson>& eval_results) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!eval_results) return out;
  auto put = [&](const std::string& tag, const std::string& key) {
    for (auto& [t, k] : out) {
      if (t == tag) {
        k = key;  // a dict: a later key replaces the value, keeping the first position
        return;
      }
    }
    out.emplace_back(tag, key);
  };
  for (const auto& [key, value] : eval_results->items()) {
    std::string tag = Lower(key);
    for (char& c : tag) {
      if (c == ' ') c = '_';
    }
    if (IsMetricTag(tag)) {
      put(tag, key);
    } else if (Lower(key) == "rouge1") {
      put("rouge", key);
    }
  }
  return out;
}

// ---- PyYAML's emitter, for the subset metadata uses ----

constexpr int kBestWidth = 80;

bool Matches(const std::string& s, const char* pattern) {
  return std::regex_match(s, std::regex(pattern));
}

// PyYAML's implicit resolvers (YAML 1.1): a plain scalar spelled like this would read back as
// another type, so the string is quoted.
bool ResolvesToNonString(const std::string& s) {
  return s.empty() || Matches(s, "yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF") ||
         Matches(s, "~|null|Null|NULL") ||
         Matches(s,
                 "[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|"
                 "[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+") ||
         Matches(s,
                 "[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?|\\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|"
                 "[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*|[-+]?\\.(?:inf|Inf|INF)|"
                 "\\.(?:nan|NaN|NAN)") ||
         Matches(s, "[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:(?:[Tt]|[ \\t]+)[0-9][0-9]?:"
                    "[0-9][0-9]:[0-9][0-9](?:\\.[0-9]*)?(?:[ \\t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)?") ||
         s == "<<" || s == "=";
}

enum class Style { kPlain, kSingle, kDouble };

// PyYAML's analyze_scalar + choose_scalar_style in block context.
Style ChooseStyle(const std::string& s) {
  if (s.empty()) return Style::kSingle;
  bool special = false, line_break = false, plain = true;
  if (s.rfind("---", 0) == 0 || s.rfind("...", 0) == 0) plain = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const bool followed_by_space = i + 1 >= s.size() || s[i + 1] == ' ' || s[i + 1] == '\n';
    if (c == '\n') {
      line_break = true;
    } else if (c < 0x20 || c > 0x7e) {
      special = true;  // allow_unicode=False: anything outside printable ASCII is escaped
    }
    if (i == 0) {
      if (std::string("#,[]{}&*!|>'\"%@`").find(static_cast<char>(c)) != std::string::npos) {
        plain = false;
      }
      if ((c == '?' || c == ':' || c == '-') && followed_by_space) plain = false;
    } else {
      if (c == ':' && followed_by_space) plain = false;
      if (c == '#' && s[i - 1] == ' ') plain = false;
    }
  }
  if (s.front() == ' ' || s.back() == ' ') plain = false;
  if (special) return Style::kDouble;
  if (line_break) return Style::kDouble;  // PyYAML folds these single-quoted; loom escapes
  if (plain && !ResolvesToNonString(s)) return Style::kPlain;
  return Style::kSingle;
}

std::string DoubleQuoted(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp = c;
    size_t n = 1;
    if (c >= 0xf0 && i + 3 < s.size()) {
      cp = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3fu) << 12) | ((s[i + 2] & 0x3fu) << 6) |
           (s[i + 3] & 0x3fu);
      n = 4;
    } else if (c >= 0xe0 && i + 2 < s.size()) {
      cp = ((c & 0x0fu) << 12) | ((s[i + 1] & 0x3fu) << 6) | (s[i + 2] & 0x3fu);
      n = 3;
    } else if (c >= 0xc0 && i + 1 < s.size()) {
      cp = ((c & 0x1fu) << 6) | (s[i + 1] & 0x3fu);
      n = 2;
    }
    i += n;
    static const std::map<uint32_t, const char*> kEscapes = {
        {0, "0"},     {7, "a"},     {8, "b"},     {9, "t"},     {10, "n"},     {11, "v"},
        {12, "f"},    {13, "r"},    {27, "e"},    {'"', "\""},  {'\\', "\\"},  {0x85, "N"},
        {0xa0, "_"},  {0x2028, "L"}, {0x2029, "P"}};
    auto e = kEscapes.find(cp);
    char buf[16];
    if (e != kEscapes.end()) {
      out += absl::StrCat("\\", e->second);
    } else if (cp >= 0x20 && cp <= 0x7e) {
      out += static_cast<char>(cp);
    } else if (cp <= 0xff) {
      std::snprintf(buf, sizeof(buf), "\\x%02X", cp);
      out += buf;
    } else if (cp <= 0xffff) {
      std::snprintf(buf, sizeof(buf), "\\u%04X", cp);
      out += buf;
    } else {
      std::snprintf(buf, sizeof(buf), "\\U%08X", cp);
      out += buf;
    }
  }
  return out + "\"";
}

// A plain scalar written from `column`, folded as PyYAML's write_plain does: at a single space
// once the line is past 80 columns, continuing at `indent`.
void WritePlain(const std::string& s, int column, int indent, std::string& out) {
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find(' ', start);
    const std::string word = s.substr(start, end == std::string::npos ? end : end - start);
    out += word;
    column += static_cast<int>(word.size());
    if (end == std::string::npos) return;
    size_t next = s.find_first_not_of(' ', end);
    if (next == end + 1 && column > kBestWidth) {
      out += "\n" + std::string(static_cast<size_t>(indent), ' ');
      column = indent;
    } else {
      out += s.substr(end, next - end);
      column += static_cast<int>(next - end);
    }
    start = next;
  }
}

std::string FloatScalar(double x) {
  if (std::isnan(x)) return ".nan";
  if (std::isinf(x)) return x > 0 ? ".inf" : "-.inf";
  std::string r = Lower(base::PythonFloatRepr(x));
  if (r.find('.') == std::string::npos && r.find('e') != std::string::npos) {
    r.replace(r.find('e'), 1, ".0e");
  }
  return r;
}

bool IsEmptyOrScalar(const OrderedJson& v) {
  return !(v.is_object() || v.is_array()) || v.empty();
}

// A scalar (or empty collection) starting at `column`; continuation lines at `indent`.
void WriteScalar(const OrderedJson& v, int column, int indent, std::string& out) {
  if (v.is_object()) {
    out += "{}";
  } else if (v.is_array()) {
    out += "[]";
  } else if (v.is_null()) {
    out += "null";
  } else if (v.is_boolean()) {
    out += v.get<bool>() ? "true" : "false";
  } else if (v.is_number_float()) {
    out += FloatScalar(v.get<double>());
  } else if (v.is_number()) {
    out += v.dump();
  } else {
    const std::string s = v.get<std::string>();
    switch (ChooseStyle(s)) {
      case Style::kPlain:
        WritePlain(s, column, indent, out);
        break;
      case Style::kSingle: {
        out += "'";
        for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
        out += "'";
        break;
      }
      case Style::kDouble:
        out += DoubleQuoted(s);
        break;
    }
  }
}

void WriteSequence(const OrderedJson& seq, int indent, bool first_inline, std::string& out);

// Keys at `indent`; the first written where the cursor is when `first_inline` (after "- ").
void WriteMapping(const OrderedJson& map, int indent, bool first_inline, std::string& out) {
  bool first = true;
  for (const auto& [key, value] : map.items()) {
    if (!(first && first_inline)) out += std::string(static_cast<size_t>(indent), ' ');
    first = false;
    const size_t line_start = out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1;
    WriteScalar(OrderedJson(key), indent, indent + 2, out);
    out += ":";
    if (IsEmptyOrScalar(value)) {
      out += " ";
      WriteScalar(value, static_cast<int>(out.size() - line_start), indent + 2, out);
      out += "\n";
    } else if (value.is_object()) {
      out += "\n";
      WriteMapping(value, indent + 2, false, out);
    } else {
      out += "\n";
      WriteSequence(value, indent, false, out);  // PyYAML: sequences in mappings not indented
    }
  }
}

void WriteSequence(const OrderedJson& seq, int indent, bool first_inline, std::string& out) {
  bool first = true;
  for (const OrderedJson& item : seq) {
    if (!(first && first_inline)) out += std::string(static_cast<size_t>(indent), ' ');
    first = false;
    out += "- ";
    if (IsEmptyOrScalar(item)) {
      WriteScalar(item, indent + 2, indent + 2, out);
      out += "\n";
    } else if (item.is_object()) {
      WriteMapping(item, indent + 2, true, out);
    } else {
      WriteSequence(item, indent + 2, true, out);
    }
  }
}

std::string Listed(const std::vector<std::string>& items) { return absl::StrJoin(items, ", "); }

}  // namespace

std::string PythonStr(const OrderedJson& v) {
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_float()) return base::PythonFloatRepr(v.get<double>());
  if (v.is_number()) return v.dump();
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string MaybeRound(const OrderedJson& v) {
  if (v.is_number_float()) {
    const std::string s = PythonStr(v);
    const size_t dot = s.find('.');
    if (dot != std::string::npos) {
      const size_t next = s.find('.', dot + 1);
      const size_t decimals = (next == std::string::npos ? s.size() : next) - dot - 1;
      if (decimals > 4) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%.4f", v.get<double>());
        return buf;
      }
    }
  }
  return PythonStr(v);
}

ParsedLogHistory ParseLogHistory(const std::vector<OrderedJson>& log_history) {
  ParsedLogHistory out;
  const int n = static_cast<int>(log_history.size());
  int idx = 0;
  while (idx < n && !log_history[static_cast<size_t>(idx)].contains("train_runtime")) ++idx;
  auto has_eval_loss = [&](int i) {
    return log_history[static_cast<size_t>(i)].contains("eval_loss");
  };
  if (idx == n) {
    // No training logs: the last evaluation, as it is.
    for (idx = n - 1; idx >= 0 && !has_eval_loss(idx); --idx) {
    }
    if (idx >= 0) out.eval_results = log_history[static_cast<size_t>(idx)];
    return out;
  }
  std::vector<OrderedJson> lines;
  OrderedJson training_loss = "No log";
  for (int i = 0; i < idx; ++i) {
    const OrderedJson& entry = log_history[static_cast<size_t>(i)];
    if (entry.contains("loss")) training_loss = entry["loss"];
    if (!entry.contains("eval_loss")) continue;
    OrderedJson metrics = entry;
    OrderedJson epoch = metrics.contains("epoch") ? metrics["epoch"] : OrderedJson(nullptr);
    OrderedJson step = metrics.contains("step") ? metrics["step"] : OrderedJson(nullptr);
    for (const char* drop : {"total_flos", "epoch", "step", "eval_runtime",
                             "eval_samples_per_second", "eval_steps_per_second",
                             "eval_jit_compilation_time"}) {
      metrics.erase(drop);
    }
    OrderedJson values = OrderedJson::object();
    values["Training Loss"] = training_loss;
    values["Epoch"] = epoch;
    values["Step"] = step;
    for (const auto& [k, v] : metrics.items()) {
      if (k == "eval_loss") {
        values["Validation Loss"] = v;
      } else {
        const size_t us = k.find('_');
        values[TitleCase(us == std::string::npos ? "" : k.substr(us + 1))] = v;
      }
    }
    lines.push_back(std::move(values));
  }
  out.lines = std::move(lines);
  int last = n - 1;
  while (last >= 0 && !has_eval_loss(last)) --last;
  if (last > 0) {  // HF's condition (an evaluation logged first of all is not reported)
    OrderedJson results = OrderedJson::object();
    for (const auto& [key, value] : log_history[static_cast<size_t>(last)].items()) {
      std::string k = key.rfind("eval_", 0) == 0 ? key.substr(5) : key;
      if (k == "runtime" || k == "samples_per_second" || k == "steps_per_second" ||
          k == "epoch" || k == "step") {
        continue;
      }
      results[TitleCase(k)] = value;
    }
    out.eval_results = std::move(results);
  }
  return out;
}

std::string MakeMarkdownTable(const std::vector<OrderedJson>& lines) {
  if (lines.empty()) return "";
  std::vector<std::string> keys;
  std::vector<size_t> widths;
  for (const auto& [k, v] : lines.front().items()) {
    keys.push_back(k);
    widths.push_back(k.size());
  }
  for (const OrderedJson& line : lines) {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (line.contains(keys[i])) widths[i] = std::max(widths[i], MaybeRound(line[keys[i]]).size());
    }
  }
  auto row = [&](const std::vector<std::string>& cells) {
    std::string r;
    for (size_t i = 0; i < cells.size() && i < widths.size(); ++i) {  // Python's zip()
      r += "| " + cells[i] + std::string(widths[i] - std::min(widths[i], cells[i].size()) + 1, ' ');
    }
    return r + "|\n";
  };
  std::string table = row(keys);
  for (size_t w : widths) table += "|:" + std::string(w, '-') + ":";
  table += "|\n";
  for (const OrderedJson& line : lines) {
    std::vector<std::string> cells;
    for (const auto& [k, v] : line.items()) cells.push_back(MaybeRound(v));
    table += row(cells);
  }
  return table;
}

OrderedJson CreateMetadata(const TrainingSummary& s) {
  const auto metric_mapping = MetricMapping(s.eval_results);
  OrderedJson meta = OrderedJson::object();
  meta["library_name"] = "transformers";
  if (!s.language.empty()) meta["language"] = s.language;
  if (s.license) meta["license"] = *s.license;
  if (s.finetuned_from && !s.finetuned_from->empty()) meta["base_model"] = *s.finetuned_from;
  if (!s.tags.empty()) meta["tags"] = s.tags;
  if (!s.dataset_tags.empty()) meta["datasets"] = s.dataset_tags;
  if (!metric_mapping.empty()) {
    OrderedJson tags = OrderedJson::array();
    for (const auto& [tag, name] : metric_mapping) tags.push_back(tag);
    meta["metrics"] = tags;
  }

  // create_model_index: one result per (task, dataset) with task, dataset and metrics.
  OrderedJson index = OrderedJson::object();
  index["name"] = s.model_name;
  index["results"] = OrderedJson::array();
  std::vector<std::pair<std::string, std::string>> tasks;
  for (const std::string& t : s.tasks) {
    auto name = TaskNames().find(t);
    if (name != TaskNames().end()) tasks.emplace_back(t, name->second);
  }
  struct DatasetEntry {
    std::string tag;
    std::optional<std::string> name, args;
    OrderedJson metadata;
  };
  // dict(zip(tags, names)) & co.: pairs up to the shorter list; a repeated tag keeps its
  // first position and its last values.
  std::vector<DatasetEntry> datasets;
  for (size_t i = 0; i < s.dataset_tags.size() && i < s.dataset.size(); ++i) {
    DatasetEntry* e = nullptr;
    for (auto& d : datasets) {
      if (d.tag == s.dataset_tags[i]) e = &d;
    }
    if (e == nullptr) e = &datasets.emplace_back(DatasetEntry{s.dataset_tags[i], {}, {}, {}});
    e->name = s.dataset[i];
    e->args = i < s.dataset_args.size() ? s.dataset_args[i] : std::nullopt;
    e->metadata = i < s.dataset_metadata.size() ? s.dataset_metadata[i] : OrderedJson::object();
  }
  if (!tasks.empty() || !datasets.empty()) {
    const size_t num_tasks = std::max<size_t>(tasks.size(), 1);
    const size_t num_datasets = std::max<size_t>(datasets.size(), 1);
    for (size_t ti = 0; ti < num_tasks; ++ti) {
      for (size_t di = 0; di < num_datasets; ++di) {
        // A result needs a task, a dataset and metrics (HF drops partial ones).
        if (tasks.empty() || datasets.empty() || metric_mapping.empty()) continue;
        OrderedJson result = OrderedJson::object();
        result["task"] = {{"name", tasks[ti].second}, {"type", tasks[ti].first}};
        const DatasetEntry& d = datasets[di];
        OrderedJson dataset = OrderedJson::object();
        dataset["name"] = *d.name;
        dataset["type"] = d.tag;
        if (d.metadata.is_object()) {
          for (const auto& [k, v] : d.metadata.items()) dataset[k] = v;
        }
        if (d.args) dataset["args"] = *d.args;
        result["dataset"] = dataset;
        OrderedJson metrics = OrderedJson::array();
        for (const auto& [tag, name] : metric_mapping) {
          OrderedJson m = OrderedJson::object();
          m["name"] = name;
          m["type"] = tag;
          m["value"] = (*s.eval_results)[name];
          metrics.push_back(m);
        }
        result["metrics"] = metrics;
        index["results"].push_back(result);
      }
    }
  }
  meta["model-index"] = OrderedJson::array({index});
  return meta;
}

std::string PyYamlDump(const OrderedJson& value) {
  std::string out;
  if (value.is_object() && !value.empty()) {
    WriteMapping(value, 0, false, out);
  } else if (value.is_array() && !value.empty()) {
    WriteSequence(value, 0, false, out);
  } else {
    WriteScalar(value, 0, 0, out);
    out += "\n...\n";
  }
  return out;
}

std::string ToModelCard(const TrainingSummary& s) {
  std::string card = absl::StrCat("---\n", PyYamlDump(CreateMetadata(s)), "---\n");
  card +=
      "\n<!-- This model card has been generated automatically according to the information the "
      "Trainer had access to. You\nshould probably proofread and complete it, then remove this "
      "comment. -->\n";
  card += absl::StrCat("\n# ", s.model_name, "\n\n");
  if (!s.finetuned_from) {
    card += "This model was trained from scratch on ";
  } else {
    card += absl::StrCat("This model is a fine-tuned version of [", *s.finetuned_from,
                         "](https://huggingface.co/", *s.finetuned_from, ") on ");
  }
  if (s.dataset.empty()) {
    card += "an unknown dataset.";
  } else if (s.dataset.size() == 1) {
    card += absl::StrCat("the ", s.dataset[0], " dataset.");
  } else {
    std::vector<std::string> head;
    for (size_t i = 0; i + 1 < s.dataset.size(); ++i) head.push_back("the " + s.dataset[i]);
    card += absl::StrCat(Listed(head), " and the ", s.dataset.back(), " datasets.");
  }
  if (s.eval_results) {
    card += "\nIt achieves the following results on the evaluation set:\n";
    std::vector<std::string> items;
    for (const auto& [name, value] : s.eval_results->items()) {
      items.push_back(absl::StrCat("- ", name, ": ", MaybeRound(value)));
    }
    card += absl::StrJoin(items, "\n");
  }
  card += "\n";
  card += "\n## Model description\n\nMore information needed\n";
  card += "\n## Intended uses & limitations\n\nMore information needed\n";
  card += "\n## Training and evaluation data\n\nMore information needed\n";
  card += "\n## Training procedure\n";
  card += "\n### Training hyperparameters\n";
  if (s.hyperparameters) {
    card += "\nThe following hyperparameters were used during training:\n";
    std::vector<std::string> items;
    for (const auto& [name, value] : *s.hyperparameters) {
      items.push_back(absl::StrCat("- ", name, ": ", value));
    }
    card += absl::StrJoin(items, "\n") + "\n";
  } else {
    card += "\nMore information needed\n";
  }
  if (s.eval_lines) {
    card += "\n### Training results\n\n" + MakeMarkdownTable(*s.eval_lines) + "\n";
  }
  card += "\n### Framework versions\n\n";
  for (const auto& [name, version] : s.framework_versions) {
    card += absl::StrCat("- ", name, " ", version, "\n");
  }
  return card;
}

}  // namespace loom::hub
