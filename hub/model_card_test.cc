#include "hub/model_card.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::hub {
namespace {

// Debian's PyYAML dumping the same value: the reference for PyYamlDump.
std::string PyYaml(const OrderedJson& value) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/value.json";
  std::ofstream(path) << value.dump();
  FILE* p = ::popen(("/usr/bin/python3 hub/testdata/pyyaml_dump.py " + path).c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0);
  return out;
}

TEST(PyYamlDumpTest, MatchesPyYamlOnTrickyStrings) {
  OrderedJson tags = OrderedJson::array();
  for (const char* s :
       {"a'b", "x: y", "-x", "yes", "No", "1.0", "", " a", "b ", "a#b", "a #b", "null", "~", "1e3",
        "0x1f", "1_0", "on", "2024-01-01", "@x", "!x", "x!", "%x", "{x", "a,b", "[a", "?", "? a", "-",
        ":x", "x:", "'x", "a\"b", "foo\tbar", "09", "0o7", "+1", ".5", "1.", "inf", ".inf", "NaN",
        "=", "<<", "a  b", "caf\xc3\xa9", "\xe2\x80\xa8", "---x", "...", "generated_from_trainer",
        "/tmp/models/bert-tiny", "GLUE MRPC", "text-classification", "12:30", "1:20:3.5"}) {
    tags.push_back(s);
  }
  OrderedJson v = OrderedJson::object();
  v["tags"] = tags;
  EXPECT_EQ(PyYamlDump(v), PyYaml(v));
}

TEST(PyYamlDumpTest, MatchesPyYamlOnNestingNumbersAndFolding) {
  std::string long_text;
  for (int i = 0; i < 30; ++i) long_text += (i ? " word" : "word") + std::to_string(i);
  OrderedJson v = OrderedJson::parse(R"({
    "library_name": "transformers",
    "base_model": "x",
    "model-index": [{"name": "x", "results": [{"task": {"name": "x", "type": "t"},
       "dataset": {"name": "GLUE MRPC", "type": "glue", "config": "mrpc", "args": "mrpc"},
       "metrics": [{"name": "Accuracy", "type": "accuracy", "value": 0.6838235294117647}]}]}],
    "empty_list": [], "empty_map": {}, "nested": [[1, 2], [], [{"a": 1}]],
    "floats": [1e-05, 3.0, 1e16, 0.1, -2.5e-300, 123456789.0, 1e22],
    "ints": [0, -7, 12345678901], "bools": [true, false], "none": null
  })");
  v["base_model"] = long_text;
  v["model-index"][0]["name"] = long_text;
  v["model-index"][0]["results"][0]["task"]["name"] = long_text;
  v["folded_in_list"] = OrderedJson::array({long_text, "x  " + long_text});
  EXPECT_EQ(PyYamlDump(v), PyYaml(v));
}

TEST(ModelCardTest, MaybeRoundIsHfs) {
  EXPECT_EQ(MaybeRound(0.123456), "0.1235");
  EXPECT_EQ(MaybeRound(0.1234), "0.1234");
  EXPECT_EQ(MaybeRound(2.0), "2.0");
  EXPECT_EQ(MaybeRound(1e-05), "1e-05");
  EXPECT_EQ(MaybeRound(1.5e-05), "0.0000");  // "5e-05" has 5 characters after the dot
  EXPECT_EQ(MaybeRound(5), "5");
  EXPECT_EQ(MaybeRound("No log"), "No log");
  EXPECT_EQ(MaybeRound(nullptr), "None");
}

std::vector<OrderedJson> LogHistory() {
  return {
      OrderedJson::parse(R"({"loss": 0.7, "grad_norm": 1.5, "learning_rate": 1e-05,
                             "epoch": 0.5, "step": 2})"),
      OrderedJson::parse(R"({"eval_loss": 0.69314, "eval_accuracy": 0.5, "eval_f1": 0.666666,
                             "eval_runtime": 0.1, "eval_samples_per_second": 10.0,
                             "eval_steps_per_second": 5.0, "epoch": 1.0, "step": 4})"),
      OrderedJson::parse(R"({"eval_loss": 0.6, "eval_accuracy": 0.75, "eval_f1": 0.8,
                             "eval_runtime": 0.1, "eval_samples_per_second": 10.0,
                             "eval_steps_per_second": 5.0, "epoch": 2.0, "step": 8})"),
      OrderedJson::parse(R"({"train_runtime": 3.5, "train_samples_per_second": 9.1,
                             "train_steps_per_second": 2.3, "total_flos": 100.0,
                             "train_loss": 0.65, "epoch": 2.0, "step": 8})"),
      OrderedJson::parse(R"({"eval_loss": 0.6, "eval_accuracy": 0.75, "eval_f1": 0.8,
                             "eval_runtime": 0.1, "eval_samples_per_second": 10.0,
                             "eval_steps_per_second": 5.0, "epoch": 2.0, "step": 8})"),
  };
}

TEST(ModelCardTest, ParseLogHistoryIsHfs) {
  ParsedLogHistory p = ParseLogHistory(LogHistory());
  ASSERT_TRUE(p.lines.has_value());
  ASSERT_EQ(p.lines->size(), 2u);
  EXPECT_EQ((*p.lines)[0].dump(),
            R"({"Training Loss":0.7,"Epoch":1.0,"Step":4,"Validation Loss":0.69314,)"
            R"("Accuracy":0.5,"F1":0.666666})");
  EXPECT_EQ((*p.lines)[1]["Training Loss"], 0.7);  // the last loss logged before it
  ASSERT_TRUE(p.eval_results.has_value());
  EXPECT_EQ(p.eval_results->dump(), R"({"Loss":0.6,"Accuracy":0.75,"F1":0.8})");

  // Evaluation only: the last evaluation as logged; nothing at all: none.
  p = ParseLogHistory({LogHistory()[1]});
  EXPECT_FALSE(p.lines.has_value());
  ASSERT_TRUE(p.eval_results.has_value());
  EXPECT_TRUE(p.eval_results->contains("eval_runtime"));
  EXPECT_FALSE(ParseLogHistory({}).eval_results.has_value());
  // Training without a loss logged yet: "No log".
  p = ParseLogHistory({LogHistory()[1], LogHistory()[3]});
  EXPECT_EQ((*p.lines)[0]["Training Loss"], "No log");
  EXPECT_FALSE(p.eval_results.has_value());  // HF reports no evaluation found at index 0
}

TEST(ModelCardTest, MarkdownTableIsHfs) {
  ParsedLogHistory p = ParseLogHistory(LogHistory());
  EXPECT_EQ(MakeMarkdownTable(*p.lines),
            "| Training Loss | Epoch | Step | Validation Loss | Accuracy | F1     |\n"
            "|:-------------:|:-----:|:----:|:---------------:|:--------:|:------:|\n"
            "| 0.7           | 1.0   | 4    | 0.6931          | 0.5      | 0.6667 |\n"
            "| 0.7           | 2.0   | 8    | 0.6             | 0.75     | 0.8    |\n");
  EXPECT_EQ(MakeMarkdownTable({}), "");
}

TEST(ModelCardTest, FullCardIsHfsText) {
  TrainingSummary s;
  s.model_name = "mrpc-out";
  s.language = {"en"};
  s.tags = {"generated_from_trainer"};
  s.finetuned_from = "models/bert-tiny";
  s.tasks = {"text-classification"};
  s.dataset = {"GLUE MRPC"};
  s.dataset_tags = {"glue"};
  s.dataset_args = {"mrpc"};
  s.dataset_metadata = {OrderedJson::parse(R"({"config": "mrpc", "split": "validation"})")};
  ParsedLogHistory p = ParseLogHistory(LogHistory());
  s.eval_lines = p.lines;
  s.eval_results = p.eval_results;
  s.hyperparameters = {{{"learning_rate", "2e-05"}, {"train_batch_size", "8"}, {"seed", "42"}}};
  s.framework_versions = {{"loom", "0.1.0"}, {"LibTorch", "1.13.0"}};
  EXPECT_EQ(ToModelCard(s), R"(---
library_name: transformers
language:
- en
base_model: models/bert-tiny
tags:
- generated_from_trainer
datasets:
- glue
metrics:
- accuracy
- f1
model-index:
- name: mrpc-out
  results:
  - task:
      name: Text Classification
      type: text-classification
    dataset:
      name: GLUE MRPC
      type: glue
      config: mrpc
      split: validation
      args: mrpc
    metrics:
    - name: Accuracy
      type: accuracy
      value: 0.75
    - name: F1
      type: f1
      value: 0.8
---

<!-- This model card has been generated automatically according to the information the Trainer had access to. You
should probably proofread and complete it, then remove this comment. -->

# mrpc-out

This model is a fine-tuned version of [models/bert-tiny](https://huggingface.co/models/bert-tiny) on the GLUE MRPC dataset.
It achieves the following results on the evaluation set:
- Loss: 0.6
- Accuracy: 0.75
- F1: 0.8

## Model description

More information needed

## Intended uses & limitations

More information needed

## Training and evaluation data

More information needed

## Training procedure

### Training hyperparameters

The following hyperparameters were used during training:
- learning_rate: 2e-05
- train_batch_size: 8
- seed: 42

### Training results

| Training Loss | Epoch | Step | Validation Loss | Accuracy | F1     |
|:-------------:|:-----:|:----:|:---------------:|:--------:|:------:|
| 0.7           | 1.0   | 4    | 0.6931          | 0.5      | 0.6667 |
| 0.7           | 2.0   | 8    | 0.6             | 0.75     | 0.8    |


### Framework versions

- loom 0.1.0
- LibTorch 1.13.0
)");
}

TEST(ModelCardTest, MinimalCard) {
  TrainingSummary s;
  s.model_name = "out";
  s.tags = {"generated_from_trainer"};
  const std::string card = ToModelCard(s);
  EXPECT_THAT(card, ::testing::StartsWith("---\nlibrary_name: transformers\ntags:\n- "
                                          "generated_from_trainer\nmodel-index:\n- name: out\n"
                                          "  results: []\n---\n"));
  EXPECT_THAT(card, ::testing::HasSubstr("This model was trained from scratch on an unknown "
                                         "dataset.\n\n## Model description"));
  EXPECT_THAT(card, ::testing::HasSubstr("### Training hyperparameters\n\nMore information "
                                         "needed\n\n### Framework versions\n\n"));
  // Results without a task or dataset are dropped, as HF drops partial results.
  s.eval_results = OrderedJson::parse(R"({"Loss": 0.5, "Accuracy": 0.5})");
  EXPECT_THAT(ToModelCard(s), ::testing::HasSubstr("metrics:\n- accuracy\nmodel-index:\n- name: "
                                                   "out\n  results: []\n"));
  s.dataset = {"a", "b", "c"};
  EXPECT_THAT(ToModelCard(s), ::testing::HasSubstr("on the a, the b and the c datasets.\n"));
}

}  // namespace
}  // namespace loom::hub
