#include "examples/glue/preprocess.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "glue/metrics.h"

namespace loom::examples::glue_script {
namespace {

at::Tensor Int64Vector(const std::vector<int64_t>& values) {
  return at::tensor(at::ArrayRef<int64_t>(values), at::TensorOptions().dtype(at::kLong)).clone();
}

// Python's repr of a str, enough for log lines: single quotes unless the text has one and no
// double quote.
std::string PyStr(const std::string& s) {
  const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = dq ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == '\\' || c == q) out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\t') {
      out += "\\t";
      continue;
    }
    out += c;
  }
  out += q;
  return out;
}

std::string PyList(const at::Tensor& t) {
  std::vector<std::string> items;
  const at::Tensor c = t.to(at::kLong).contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) items.push_back(std::to_string(c[i].item<int64_t>()));
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

absl::StatusOr<std::shared_ptr<data::ExampleListDataset>> TokenizeSplit(
    const text::BertTokenizer& tokenizer, const glue::GlueSplit& split,
    const TokenizeOptions& options) {
  text::EncodeOptions enc;
  enc.max_length = options.max_length;
  enc.truncation = text::Truncation::kLongestFirst;
  enc.padding = options.pad_to_max_length ? text::Padding::kMaxLength : text::Padding::kDoNotPad;
  int64_t n = static_cast<int64_t>(split.examples.size());
  if (options.max_examples >= 0) n = std::min(n, options.max_examples);
  std::vector<data::Example> examples;
  examples.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const glue::GlueExample& ex = split.examples[static_cast<size_t>(i)];
    std::optional<absl::string_view> pair;
    if (ex.text_b.has_value()) pair = *ex.text_b;
    absl::StatusOr<text::Encoding> encoding = tokenizer.Encode(ex.text_a, pair, enc);
    if (!encoding.ok()) {
      return absl::Status(encoding.status().code(),
                          absl::StrCat(split.path, ": example ", i, " (idx ", ex.idx,
                                       "): ", encoding.status().message()));
    }
    data::Example out = {{"input_ids", Int64Vector(encoding->input_ids)},
                         {"token_type_ids", Int64Vector(encoding->token_type_ids)},
                         {"attention_mask", Int64Vector(encoding->attention_mask)}};
    if (options.keep_labels && ex.has_label()) {
      if (options.is_regression) {
        const double v = std::holds_alternative<double>(ex.label)
                             ? ex.score()
                             : static_cast<double>(ex.class_id());
        out["label"] = at::scalar_tensor(v, at::TensorOptions().dtype(at::kFloat));
      } else {
        if (!std::holds_alternative<int64_t>(ex.label)) {
          return absl::InvalidArgumentError(absl::StrCat(
              split.path, ": example ", i, " has a float label in a classification task"));
        }
        int64_t id = ex.class_id();
        if (id != -1 && !options.label_to_id.empty()) {
          auto it = options.label_to_id.find(id);
          if (it == options.label_to_id.end()) {
            return absl::InvalidArgumentError(
                absl::StrCat(split.path, ": example ", i, " has label id ", id,
                             " that the model's label mapping does not have"));
          }
          id = it->second;
        }
        out["label"] = at::scalar_tensor(id, at::TensorOptions().dtype(at::kLong));
      }
    }
    examples.push_back(std::move(out));
  }
  return std::make_shared<data::ExampleListDataset>(std::move(examples));
}

std::map<int64_t, int64_t> ModelLabelMapping(const models::bert::BertConfig& config,
                                             const std::optional<std::string>& task_name,
                                             bool is_regression,
                                             const std::vector<std::string>& label_list,
                                             std::string* warning) {
  if (!task_name.has_value() || is_regression) return {};
  std::map<std::string, int64_t> defaults;
  for (size_t i = 0; i < label_list.size(); ++i) defaults[absl::StrCat("LABEL_", i)] = i;
  if (config.label2id == defaults) return {};
  std::map<std::string, int64_t> by_name;
  for (const auto& [name, id] : config.label2id) by_name[Lower(name)] = id;
  std::vector<std::string> model_names, data_names(label_list);
  for (const auto& [name, id] : by_name) model_names.push_back(name);
  std::sort(data_names.begin(), data_names.end());
  if (model_names != data_names) {
    *warning = absl::StrCat(
        "Your model seems to have been trained with labels, but they don't match the dataset: "
        "model labels: [",
        absl::StrJoin(model_names, ", "), "], dataset labels: [", absl::StrJoin(data_names, ", "),
        "].\nIgnoring the model labels as a result.");
    return {};
  }
  std::map<int64_t, int64_t> mapping;
  for (size_t i = 0; i < label_list.size(); ++i) mapping[i] = by_name.at(label_list[i]);
  return mapping;
}

trainer::ComputeMetricsFn GlueComputeMetrics(std::string task_name, bool is_regression) {
  return [task_name,
          is_regression](const trainer::EvalPrediction& p) -> absl::StatusOr<trainer::Metrics> {
    if (p.predictions.empty() || p.label_ids.empty()) {
      return absl::InvalidArgumentError("compute_metrics needs the logits and the labels");
    }
    const at::Tensor logits = p.predictions.front().detach().to(at::kCPU);
    const at::Tensor labels = p.label_ids.front().detach().to(at::kCPU);
    glue::MetricList result;
    if (is_regression) {
      const at::Tensor x = logits.reshape({-1}).to(at::kDouble).contiguous();
      const at::Tensor y = labels.reshape({-1}).to(at::kDouble).contiguous();
      std::vector<double> preds(x.data_ptr<double>(), x.data_ptr<double>() + x.numel());
      std::vector<double> refs(y.data_ptr<double>(), y.data_ptr<double>() + y.numel());
      ASSIGN_OR_RETURN(result, glue::EvaluateRegression(task_name, preds, refs));
    } else {
      const at::Tensor x = logits.argmax(-1).to(at::kLong).contiguous();
      const at::Tensor y = labels.reshape({-1}).to(at::kLong).contiguous();
      std::vector<int64_t> preds(x.data_ptr<int64_t>(), x.data_ptr<int64_t>() + x.numel());
      std::vector<int64_t> refs(y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + y.numel());
      ASSIGN_OR_RETURN(result, glue::EvaluateClassification(task_name, preds, refs));
    }
    glue::AddCombinedScore(result);
    trainer::Metrics m = trainer::Metrics::object();
    for (const auto& [name, value] : result) m[name] = value;
    return m;
  };
}

absl::StatusOr<std::string> FormatPredictResults(const at::Tensor& logits, bool is_regression,
                                                 const std::vector<std::string>& label_list) {
  std::string text = "index\tprediction\n";
  const at::Tensor cpu = logits.detach().to(at::kCPU);
  if (is_regression) {
    const at::Tensor v = cpu.reshape({-1}).to(at::kFloat).contiguous();
    for (int64_t i = 0; i < v.numel(); ++i) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%3.3f", static_cast<double>(v.data_ptr<float>()[i]));
      absl::StrAppend(&text, i, "\t", buf, "\n");
    }
    return text;
  }
  const at::Tensor ids = cpu.argmax(-1).to(at::kLong).contiguous();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    const int64_t id = ids.data_ptr<int64_t>()[i];
    if (id < 0 || id >= static_cast<int64_t>(label_list.size())) {
      return absl::InternalError(absl::StrCat("predicted class ", id, " has no name in the ",
                                              label_list.size(), " labels"));
    }
    absl::StrAppend(&text, i, "\t", label_list[static_cast<size_t>(id)], "\n");
  }
  return text;
}

std::string DescribeTrainingSample(int64_t index, const glue::GlueExample& raw,
                                   const data::Example& encoded, const std::string& key1,
                                   const std::optional<std::string>& key2) {
  std::vector<std::string> items = {absl::StrCat(PyStr(key1), ": ", PyStr(raw.text_a))};
  if (key2.has_value() && raw.text_b.has_value()) {
    items.push_back(absl::StrCat(PyStr(*key2), ": ", PyStr(*raw.text_b)));
  }
  if (auto it = encoded.find("label"); it != encoded.end()) {
    items.push_back(absl::StrCat("'label': ", it->second.is_floating_point()
                                                  ? absl::StrCat(it->second.item<double>())
                                                  : absl::StrCat(it->second.item<int64_t>())));
  }
  items.push_back(absl::StrCat("'idx': ", raw.idx));
  for (const char* name : {"input_ids", "token_type_ids", "attention_mask"}) {
    if (auto it = encoded.find(name); it != encoded.end()) {
      items.push_back(absl::StrCat("'", name, "': ", PyList(it->second)));
    }
  }
  return absl::StrCat("Sample ", index, " of the training set: {", absl::StrJoin(items, ", "),
                      "}.");
}

std::vector<int64_t> SampleIndices(int64_t n, int64_t k) {
  std::vector<int64_t> all(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
  std::mt19937_64 rng(0);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(static_cast<size_t>(std::min<int64_t>(std::max<int64_t>(k, 0), n)));
  return all;
}

}  // namespace loom::examples::glue_script
