#include "models/llama/llama_for_causal_lm.h"

#include <exception>
#include <map>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "modeling/input_checks.h"
#include "modeling/layers.h"

namespace loom::models::llama {
namespace {

constexpr char kContext[] = "LlamaForCausalLM";

using modeling::Get;

// GenerationConfig.from_model_config for a decoder-only model: its bos / eos / pad ids.
modeling::GenerationConfig FromModelConfig(const LlamaConfig& c) {
  modeling::GenerationConfig g;
  g.bos_token_id = c.bos_token_id;
  g.eos_token_id = c.eos_token_id;
  g.pad_token_id = c.pad_token_id;
  g.from_model_config = true;
  return g;
}

}  // namespace

LlamaForCausalLM::LlamaForCausalLM(const LlamaConfig& config, bool deferred) : config_(config) {
  model = register_module("model", std::make_shared<LlamaModel>(config, deferred));
  if (!config.tie_word_embeddings) {
    lm_head = register_module(
        "lm_head", torch::nn::Linear(
                       torch::nn::LinearOptions(config.hidden_size, config.vocab_size).bias(false)));
    if (deferred) modeling::DeferParameters(*lm_head);
  }
  non_embedding_parameters_ = modeling::NonEmbeddingParameterCount(*this);
  generation_config_ = FromModelConfig(config);
}

absl::StatusOr<std::shared_ptr<LlamaForCausalLM>> LlamaForCausalLM::Create(
    const LlamaConfig& config, uint64_t seed) {
  RETURN_IF_ERROR(config.Validate("LlamaConfig"));
  try {
    auto model = std::make_shared<LlamaForCausalLM>(config);
    InitLlamaWeights(*model, "", config, seed);
    model->seed_ = seed;
    return model;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, kContext);
  }
}

absl::StatusOr<std::shared_ptr<LlamaForCausalLM>> LlamaForCausalLM::CreateDeferred(
    const LlamaConfig& config, uint64_t seed) {
  RETURN_IF_ERROR(config.Validate("LlamaConfig"));
  try {
    auto model = std::make_shared<LlamaForCausalLM>(config, /*deferred=*/true);
    model->seed_ = seed;
    model->set_parameter_fill(model->InitFill());
    return model;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, kContext);
  }
}

modeling::ParameterFill LlamaForCausalLM::InitFill() const {
  // Each parameter's owning module, by its path in the model.
  auto owners = std::make_shared<std::map<std::string, std::shared_ptr<torch::nn::Module>>>();
  for (const auto& item : named_modules("", /*include_self=*/false)) {
    (*owners)[item.key()] = item.value();
  }
  return [owners, config = config_, seed = seed_](const std::string& name,
                                                   at::Tensor& dest) -> absl::Status {
    const size_t dot = name.rfind('.');
    auto it = dot == std::string::npos ? owners->end() : owners->find(name.substr(0, dot));
    if (it == owners->end()) {
      return absl::NotFoundError(absl::StrCat(name, " is not a parameter of LlamaForCausalLM"));
    }
    InitLlamaParameter(*it->second, name.substr(dot + 1), name, config, seed, dest);
    return absl::OkStatus();
  };
}

absl::Status LlamaForCausalLM::CheckInputs(const data::Batch& inputs) const {
  ASSIGN_OR_RETURN(const at::Tensor ids, modeling::RequireKey(inputs, "input_ids", kContext));
  const int64_t vocab = config_.vocab_size;
  const int64_t batch = ids.dim() > 0 ? ids.size(0) : 0;
  RETURN_IF_ERROR(modeling::CheckIds(ids, "input_ids", batch, vocab, false, kContext));
  for (const char* name : {"attention_mask", "position_ids"}) {
    RETURN_IF_ERROR(modeling::CheckSameShape(Get(inputs, name), name, ids, "input_ids", kContext));
  }
  const at::Tensor labels = Get(inputs, "labels");
  if (!labels.defined()) return absl::OkStatus();
  RETURN_IF_ERROR(modeling::CheckIds(labels, "labels", batch, vocab, true, kContext));
  return modeling::CheckSameShape(labels, "labels", ids, "input_ids", kContext);
}

absl::Status LlamaForCausalLM::SetUnitRunner(modeling::UnitRunner* runner) {
  model->unit_runner = runner;
  return absl::OkStatus();
}

absl::Status LlamaForCausalLM::EnableGradientCheckpointing(
    const modeling::CheckpointingOptions& options) {
  model->gradient_checkpointing = options;
  return absl::OkStatus();
}

void LlamaForCausalLM::DisableGradientCheckpointing() { model->gradient_checkpointing.reset(); }

bool LlamaForCausalLM::IsGradientCheckpointing() const {
  return model->gradient_checkpointing.has_value();
}

at::Tensor LlamaForCausalLM::Logits(const at::Tensor& hidden) {
  const at::Tensor logits = config_.tie_word_embeddings
                                ? at::linear(hidden, model->embed_tokens->weight)
                                : modeling::Dense(lm_head, hidden);
  return logits.to(at::kFloat);
}

absl::StatusOr<modeling::ModelOutput> LlamaForCausalLM::TryForward(const data::Batch& inputs) {
  RETURN_IF_ERROR(CheckInputs(inputs));
  try {
    const at::Tensor hidden = model->Forward(Get(inputs, "input_ids"), Get(inputs, "attention_mask"),
                                             Get(inputs, "position_ids"), /*cache=*/nullptr);
    const at::Tensor logits = Logits(hidden);
    modeling::ModelOutput out;
    if (const at::Tensor labels = Get(inputs, "labels"); labels.defined()) {
      const int64_t seq = logits.size(1), vocab = logits.size(-1);
      const at::Tensor shift_logits = logits.narrow(1, 0, seq - 1).contiguous().view({-1, vocab});
      const at::Tensor shift_labels =
          labels.narrow(1, 1, seq - 1).contiguous().view(-1).to(logits.device()).to(at::kLong);
      out.loss = at::cross_entropy_loss(shift_logits, shift_labels, /*weight=*/{},
                                        at::Reduction::Mean, /*ignore_index=*/-100);
    }
    out.outputs.push_back({"logits", logits});
    return out;
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, kContext);
  }
}

modeling::ModelOutput LlamaForCausalLM::Forward(const data::Batch& inputs) {
  absl::StatusOr<modeling::ModelOutput> out = TryForward(inputs);
  if (!out.ok()) throw std::invalid_argument(std::string(out.status().message()));
  return *std::move(out);
}

at::Tensor LlamaForCausalLM::NextTokenLogits(const at::Tensor& new_ids,
                                             const at::Tensor& attention_mask,
                                             const at::Tensor& position_ids,
                                             modeling::DecoderCache* cache) {
  LlamaCache* llama_cache = nullptr;
  if (cache != nullptr) {
    llama_cache = dynamic_cast<LlamaCache*>(cache);
    if (llama_cache == nullptr) {
      throw std::invalid_argument("LlamaForCausalLM needs the cache NewDecoderCache made");
    }
  }
  const at::Tensor hidden = model->Forward(new_ids, attention_mask, position_ids, llama_cache);
  return Logits(hidden.select(1, -1));
}

double LlamaForCausalLM::FloatingPointOps(const data::Batch& inputs) const {
  const at::Tensor ids = Get(inputs, "input_ids");
  if (!ids.defined()) return 0;
  return 6.0 * static_cast<double>(ids.numel()) * static_cast<double>(non_embedding_parameters_);
}

std::string LlamaForCausalLM::ConfigJson() const {
  LlamaConfig saved = config_;
  saved.architectures = std::vector<std::string>{"LlamaForCausalLM"};
  saved.torch_dtype = modeling::TorchDtypeName(model->embed_tokens->weight.scalar_type());
  return saved.ToJson();
}

}  // namespace loom::models::llama
