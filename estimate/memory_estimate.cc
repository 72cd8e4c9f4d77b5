#include "estimate/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "checkpoint/model_weights.h"
#include "models/bert/bert_config.h"
#include "nlohmann/json.hpp"

namespace loom::estimate {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Row(const MemoryNeeds& needs, const std::string& options) {
  char line[256];
  std::snprintf(line, sizeof(line), " %7.2fGB | %6.2fGB | %s\n",
                static_cast<double>(needs.cpu_bytes) / kGiB,
                static_cast<double>(needs.gpu_bytes) / kGiB, options.c_str());
  return line;
}

std::string Header(const EstimateInputs& in) {
  return absl::StrCat("Estimated memory needed for params, optim states and gradients for a:\n",
                      "HW: Setup with ", in.num_nodes, " ", in.num_nodes > 1 ? "nodes" : "node",
                      ", ", in.num_gpus_per_node, " ", in.num_gpus_per_node > 1 ? "GPUs" : "GPU",
                      " per node.\n");
}

// Python's int(total_params / 1e6).
int64_t Millions(int64_t n) { return static_cast<int64_t>(static_cast<double>(n) / 1e6); }

const char* Device(bool cpu) { return cpu ? "cpu " : "none"; }

}  // namespace

MemoryNeeds Zero3Needs(const EstimateInputs& in, bool offload_optimizer, bool offload_param,
                       bool zero_init) {
  const int64_t p = in.total_params;
  const int64_t g = in.num_gpus_per_node;
  const int64_t total_gpus = in.num_nodes * g;
  const double gpus_factor = 1.0 / in.num_nodes;
  const double f = in.additional_buffer_factor;
  const int64_t largest_layer_memory = 4 * in.largest_layer_params;
  // max(4 * g, x * gpus_factor): the int when it is the larger or equal (Python's max keeps the
  // first of equals), times p as an int; else p times the float.
  const auto p_times_max = [&](double x) {
    const double other = x * gpus_factor;
    return static_cast<double>(4 * g) >= other ? static_cast<double>(p * (4 * g))
                                               : static_cast<double>(p) * other;
  };
  double cpu = 0;
  int64_t gpu = 0;
  if (offload_optimizer) {
    if (offload_param) {
      gpu = largest_layer_memory;
      cpu = zero_init ? static_cast<double>(p * 18) * gpus_factor * f : p_times_max(18) * f;
    } else {
      gpu = largest_layer_memory +
            static_cast<int64_t>(static_cast<double>(2 * p) / static_cast<double>(total_gpus));
      cpu = zero_init ? static_cast<double>(p * 16) * gpus_factor * f : p_times_max(16) * f;
    }
  } else {
    gpu = largest_layer_memory +
          static_cast<int64_t>(static_cast<double>(18 * p) / static_cast<double>(total_gpus));
    cpu = zero_init ? static_cast<double>(in.largest_layer_params * 4 * g) * f
                    : static_cast<double>(p * 4 * g) * f;
  }
  return {static_cast<int64_t>(cpu), gpu};
}

MemoryNeeds Zero2Needs(const EstimateInputs& in, bool offload_optimizer) {
  const int64_t p = in.total_params;
  const int64_t total_gpus = in.num_nodes * in.num_gpus_per_node;
  const double f = in.additional_buffer_factor;
  if (offload_optimizer) {
    return {
        static_cast<int64_t>(static_cast<double>(p * std::max<int64_t>(4 * total_gpus, 16)) * f),
        2 * p};
  }
  return {
      static_cast<int64_t>(static_cast<double>(p * 4 * in.num_gpus_per_node) * f),
      2 * p + static_cast<int64_t>(static_cast<double>(18 * p) / static_cast<double>(total_gpus))};
}

std::vector<EstimateRow> Zero3Rows(const EstimateInputs& in) {
  std::vector<EstimateRow> rows;
  for (bool offload_optimizer : {true, false}) {
    for (bool offload_param : {true, false}) {
      if (!offload_optimizer && offload_param) continue;
      for (bool zero_init : {true, false}) {
        rows.push_back({offload_optimizer, offload_param, zero_init,
                        Zero3Needs(in, offload_optimizer, offload_param, zero_init)});
      }
    }
  }
  return rows;
}

std::vector<EstimateRow> Zero2Rows(const EstimateInputs& in) {
  std::vector<EstimateRow> rows;
  for (bool offload_optimizer : {true, false}) {
    rows.push_back({offload_optimizer, false, false, Zero2Needs(in, offload_optimizer)});
  }
  return rows;
}

std::string Zero3Table(const EstimateInputs& in) {
  std::string out = absl::StrCat(Header(in), "SW: Model with ", Millions(in.total_params),
                                 "M total params, ", Millions(in.largest_layer_params),
                                 "M largest layer params.\n  per CPU  |  per GPU |   Options\n");
  for (const EstimateRow& r : Zero3Rows(in)) {
    out += Row(r.needs, absl::StrCat("offload_param=", Device(r.offload_param),
                                     ", offload_optimizer=", Device(r.offload_optimizer),
                                     ", zero_init=", r.zero_init ? 1 : 0));
  }
  return out;
}

std::string Zero2Table(const EstimateInputs& in) {
  std::string out = absl::StrCat(Header(in), "SW: Model with ", Millions(in.total_params),
                                 "M total params.\n  per CPU  |  per GPU |   Options\n");
  for (const EstimateRow& r : Zero2Rows(in)) {
    out += Row(r.needs, absl::StrCat("offload_optimizer=", Device(r.offload_optimizer)));
  }
  return out;
}

std::vector<LoomRow> LoomRows(const EstimateInputs& in) {
  const int64_t p = in.total_params;
  const int64_t n = static_cast<int64_t>(in.num_gpus_per_node) * in.num_nodes;
  const int64_t l = in.largest_layer_params;
  const auto per_rank = [&](int64_t bytes_per_param, int64_t ranks) {
    return bytes_per_param * p / ranks;
  };
  return {
      {"DDP / FSDP no_shard", 16 * p, std::nullopt},
      {"ZeRO-1", 8 * p + per_rank(16, n), 4 * p + per_rank(18, n)},
      {"ZeRO-2", 4 * p + per_rank(16, n), 2 * p + per_rank(18, n)},
      {"ZeRO-3 / FSDP full_shard", per_rank(16, n) + 4 * l, std::nullopt},
      {"FSDP hybrid_shard", per_rank(16, in.num_gpus_per_node) + 4 * l, std::nullopt},
  };
}

std::string LoomTable(const EstimateInputs& in) {
  std::string out = absl::StrCat(
      "loom's per-rank model states (parameters, gradients, optimizer states, master weights; "
      "no offload; ",
      static_cast<int64_t>(in.num_gpus_per_node) * in.num_nodes, " ranks):\n",
      "  fp32 weights | bf16 weights | Strategy\n");
  for (const LoomRow& r : LoomRows(in)) {
    char line[256];
    std::snprintf(line, sizeof(line), "  %10.2fGB | %10s | %s\n",
                  static_cast<double>(r.fp32_bytes) / kGiB,
                  r.bf16_bytes ? absl::StrFormat("%.2fGB", *r.bf16_bytes / kGiB).c_str() : "n/a",
                  r.strategy.c_str());
    out += line;
  }
  return out;
}

std::string TableJson(int stage, const EstimateInputs& in, bool loom) {
  nlohmann::ordered_json j;
  j["stage"] = stage;
  j["total_params"] = in.total_params;
  if (stage == 3) j["largest_layer_params"] = in.largest_layer_params;
  j["num_gpus_per_node"] = in.num_gpus_per_node;
  j["num_nodes"] = in.num_nodes;
  j["additional_buffer_factor"] = in.additional_buffer_factor;
  j["rows"] = nlohmann::ordered_json::array();
  for (const EstimateRow& r : stage == 3 ? Zero3Rows(in) : Zero2Rows(in)) {
    nlohmann::ordered_json row;
    if (stage == 3) row["offload_param"] = r.offload_param ? "cpu" : "none";
    row["offload_optimizer"] = r.offload_optimizer ? "cpu" : "none";
    if (stage == 3) row["zero_init"] = r.zero_init;
    row["cpu_bytes"] = r.needs.cpu_bytes;
    row["gpu_bytes"] = r.needs.gpu_bytes;
    j["rows"].push_back(row);
  }
  if (loom) {
    j["loom_rows"] = nlohmann::ordered_json::array();
    for (const LoomRow& r : LoomRows(in)) {
      nlohmann::ordered_json row;
      row["strategy"] = r.strategy;
      row["fp32_bytes"] = r.fp32_bytes;
      row["bf16_bytes"] = r.bf16_bytes ? nlohmann::ordered_json(*r.bf16_bytes) : nullptr;
      j["loom_rows"].push_back(row);
    }
  }
  return j.dump(2) + "\n";
}

absl::StatusOr<ModelParams> ParamsOfFolder(const std::string& dir) {
  namespace fs = std::filesystem;
  ModelParams out;
  absl::StatusOr<checkpoint::LoadedWeights> weights = checkpoint::LoadModelWeights(dir);
  if (weights.ok()) {
    out.source = weights->source;
    std::set<std::pair<const void*, int64_t>> seen;  // (storage, offset): tied tensors once
    std::map<std::string, int64_t> per_module;
    for (const auto& [name, t] : weights->tensors) {
      if (!t.is_floating_point()) continue;  // integer buffers (position ids) are no parameters
      if (!seen.insert({t.storage().data(), t.storage_offset()}).second) continue;
      out.total_params += t.numel();
      const size_t dot = name.rfind('.');
      per_module[dot == std::string::npos ? "" : name.substr(0, dot)] += t.numel();
    }
    for (const auto& [module, n] : per_module) {
      out.largest_layer_params = std::max(out.largest_layer_params, n);
    }
    return out;
  }
  const std::string config_path = dir + "/config.json";
  if (!fs::exists(config_path)) {
    return absl::NotFoundError(absl::StrCat(
        dir,
        " holds no model weights (model.safetensors, an index, pytorch_model.bin) and no "
        "config.json: ",
        weights.status().message()));
  }
  // A BERT config alone: the counts BertForSequenceClassification would have.
  ASSIGN_OR_RETURN(models::bert::BertConfig c, models::bert::BertConfig::FromFile(config_path));
  const int64_t h = c.hidden_size, i = c.intermediate_size, labels = c.num_labels();
  const int64_t embeddings = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * h;
  const int64_t layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h;
  out.total_params =
      embeddings + 2 * h + c.num_hidden_layers * layer + (h * h + h) + (labels * h + labels);
  out.largest_layer_params =
      std::max({c.vocab_size * h, c.max_position_embeddings * h, h * i + i, i * h + h});
  out.source = config_path;
  return out;
}

}  // namespace loom::estimate
