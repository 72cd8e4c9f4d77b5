#include "sharding/offload/optimizer_swapper.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "optim/hf_adamw.h"
#include "optim/param_state.h"
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

namespace loom::sharding {
namespace {

constexpr char kPathKey[] = "zero_optimization.offload_optimizer.nvme_path";

// The state tensors of one parameter in file order (empty: none made yet), and back.
template <typename S>
bool AdamLike(torch::optim::OptimizerParamState* s, std::vector<at::Tensor>* get,
              const std::vector<at::Tensor>* set) {
  auto* a = dynamic_cast<S*>(s);
  if (a == nullptr) return false;
  if (get != nullptr) *get = {a->exp_avg(), a->exp_avg_sq()};
  if (set != nullptr) {
    a->exp_avg((*set)[0]);
    a->exp_avg_sq((*set)[1]);
  }
  return true;
}

bool StateTensors(torch::optim::OptimizerParamState* s, std::vector<at::Tensor>* get,
                  const std::vector<at::Tensor>* set) {
  if (AdamLike<torch::optim::AdamWParamState>(s, get, set) ||
      AdamLike<torch::optim::AdamParamState>(s, get, set) ||
      AdamLike<optim::HfAdamWParamState>(s, get, set)) {
    return true;
  }
  if (auto* a = dynamic_cast<torch::optim::AdagradParamState*>(s)) {
    if (get != nullptr) *get = {a->sum()};
    if (set != nullptr) a->sum((*set)[0]);
    return true;
  }
  return false;
}

// Elements of state per parameter element, by optimizer; 0 for one whose state loom does not
// know how to swap.
int StatesPerElement(torch::optim::Optimizer& opt) {
  auto amsgrad = [&](auto* typed, auto options_tag) {
    using Options = decltype(options_tag);
    for (const auto& g : typed->param_groups()) {
      if (static_cast<const Options&>(g.options()).amsgrad()) return true;
    }
    return false;
  };
  if (auto* o = dynamic_cast<torch::optim::AdamW*>(&opt)) {
    return amsgrad(o, torch::optim::AdamWOptions()) ? 0 : 2;
  }
  if (auto* o = dynamic_cast<torch::optim::Adam*>(&opt)) {
    return amsgrad(o, torch::optim::AdamOptions()) ? 0 : 2;
  }
  if (dynamic_cast<optim::HfAdamW*>(&opt) != nullptr) return 2;
  if (dynamic_cast<torch::optim::Adagrad*>(&opt) != nullptr) return 1;
  return 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<OptimizerSwapper>> OptimizerSwapper::Create(
    const OptimizerSwapperOptions& o, torch::optim::Optimizer* optimizer,
    std::vector<at::Tensor> shards) {
  if (optimizer == nullptr) return absl::InvalidArgumentError("OptimizerSwapper: no optimizer");
  auto swapper = absl::WrapUnique(new OptimizerSwapper());
  swapper->options_ = o;
  swapper->optimizer_ = optimizer;
  swapper->states_per_element_ = StatesPerElement(*optimizer);
  if (swapper->states_per_element_ == 0) {
    return absl::InvalidArgumentError(
        "zero_optimization.offload_optimizer.device \"nvme\": the optimizer must be Adam, AdamW "
        "or Adagrad (without amsgrad) for its state to be swapped; use one, or offload to "
        "\"cpu\"");
  }
  if (o.buffer_count < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "zero_optimization.offload_optimizer.buffer_count: ", o.buffer_count, " must be >= 1"));
  }
  if (o.sub_group_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("zero_optimization.sub_group_size: ", o.sub_group_size, " must be >= 1"));
  }
  for (const at::Tensor& s : shards) {
    if (!s.device().is_cpu() || s.scalar_type() != at::kFloat || !s.is_contiguous()) {
      return absl::InvalidArgumentError(
          "OptimizerSwapper: the shards must be contiguous CPU float32 tensors");
    }
  }
  swapper->shards_ = std::move(shards);
  // Sub-groups: consecutive shards up to sub_group_size elements (DeepSpeed's sub_group_size).
  int64_t total = 0, largest = 0;
  for (size_t i = 0; i < swapper->shards_.size(); ++i) {
    const int64_t n = swapper->shards_[i].numel();
    if (swapper->groups_.empty() || swapper->groups_.back().numel + n > o.sub_group_size) {
      swapper->groups_.emplace_back();
    }
    SubGroup& g = swapper->groups_.back();
    g.shards.push_back(i);
    g.numel += n;
  }
  for (SubGroup& g : swapper->groups_) {
    g.bytes = aio::AlignUp(g.numel * swapper->states_per_element_ * 4);
    total += g.bytes;
    largest = std::max(largest, g.bytes);
  }
  // Every file, plus one being rewritten beside it (NAME.partial).
  ASSIGN_OR_RETURN(swapper->space_,
                   OpenSwapSpace(kPathKey, o.nvme_path, o.aio, total + largest,
                                 absl::StrCat("loom-swap-rank", o.rank)));
  for (size_t i = 0; i < swapper->groups_.size(); ++i) {
    swapper->groups_[i].file = absl::StrCat(swapper->space_.folder->path(), "/sub_group", i, ".swp");
  }
  return swapper;
}

OptimizerSwapper::~OptimizerSwapper() {
  for (SubGroup& g : groups_) {
    if (g.reading.valid()) g.reading.wait();
    if (g.writing.valid()) g.writing.wait();
  }
  // scratch_ goes next: the files and the folder are removed.
}

std::string OptimizerSwapper::Describe() const {
  int64_t numel = 0, bytes = 0;
  for (const SubGroup& g : groups_) {
    numel += g.numel;
    bytes += g.bytes;
  }
  return absl::StrCat("NVMe swap: optimizer state of ", numel, " elements (", bytes,
                      " bytes) in ", groups_.size(), " sub-group(s) under ", space_.folder->path(),
                      space_.direct ? " with O_DIRECT" : " with buffered I/O (the filesystem takes no O_DIRECT)",
                      "; buffer_count ", options_.buffer_count, ", aio block_size ",
                      options_.aio.block_size, ", queue_depth ", options_.aio.queue_depth);
}

int64_t OptimizerSwapper::resident_bytes() const {
  int64_t bytes = 0;
  for (const SubGroup& g : groups_) {
    if (g.buffer != nullptr) {
      bytes += g.buffer->size();  // the state viewed in it, or in flight
    } else if (!g.on_disk) {
      for (size_t k : g.shards) {  // made by the optimizer, not yet packed
        if (optimizer_->state().count(optim::ParamStateKey(shards_[k])) > 0) {
          bytes += shards_[k].numel() * states_per_element_ * 4;
        }
      }
    }
  }
  return bytes;
}

absl::Status OptimizerSwapper::StartRead(SubGroup& g) {
  if (!g.on_disk || g.reading.valid()) return absl::OkStatus();
  RETURN_IF_ERROR(FinishWrite(g));  // a file still being written is read after it
  ASSIGN_OR_RETURN(g.buffer, aio::NewAlignedBuffer(g.bytes), "swapping optimizer state in");
  g.reading = space_.engine->ReadAsync(g.file, g.buffer->data(), g.bytes);
  return absl::OkStatus();
}

absl::Status OptimizerSwapper::FinishRead(SubGroup& g) {
  if (!g.on_disk) return absl::OkStatus();
  RETURN_IF_ERROR(StartRead(g));
  RETURN_IF_ERROR(g.reading.get());
  // The state tensors become views of the buffer (which they keep alive).
  std::shared_ptr<aio::AlignedBuffer> buffer = g.buffer;
  float* data = static_cast<float*>(buffer->data());
  int64_t offset = 0;
  for (size_t i : g.shards) {
    const at::Tensor& shard = shards_[i];
    auto it = optimizer_->state().find(optim::ParamStateKey(shard));
    if (it == optimizer_->state().end()) {
      return absl::InternalError("OptimizerSwapper: a swapped state disappeared");
    }
    std::vector<at::Tensor> views;
    for (int k = 0; k < states_per_element_; ++k) {
      views.push_back(at::from_blob(
          data + offset, shard.sizes(), [buffer](void*) {}, at::TensorOptions().dtype(at::kFloat)));
      offset += shard.numel();
    }
    StateTensors(it->second.get(), nullptr, &views);
  }
  g.on_disk = false;
  return absl::OkStatus();
}

absl::Status OptimizerSwapper::StartWrite(SubGroup& g) {
  if (g.on_disk) return absl::OkStatus();
  // This sub-group's states, in file order; none yet (before the first step): nothing to write.
  std::vector<std::vector<at::Tensor>> states;
  std::vector<torch::optim::OptimizerParamState*> objects;
  for (size_t i : g.shards) {
    auto it = optimizer_->state().find(optim::ParamStateKey(shards_[i]));
    if (it == optimizer_->state().end()) {
      if (!states.empty()) {
        return absl::InternalError("OptimizerSwapper: a sub-group's state is only partly made");
      }
      continue;
    }
    std::vector<at::Tensor> ts;
    if (!StateTensors(it->second.get(), &ts, nullptr)) {
      return absl::InvalidArgumentError("OptimizerSwapper: an optimizer state of unknown kind");
    }
    states.push_back(std::move(ts));
    objects.push_back(it->second.get());
  }
  if (states.empty()) return absl::OkStatus();
  if (states.size() != g.shards.size()) {
    return absl::InternalError("OptimizerSwapper: a sub-group's state is only partly made");
  }
  if (g.buffer == nullptr) {
    ASSIGN_OR_RETURN(g.buffer, aio::NewAlignedBuffer(g.bytes), "swapping optimizer state out");
  }
  try {
    float* data = static_cast<float*>(g.buffer->data());
    int64_t offset = 0;
    for (size_t j = 0; j < g.shards.size(); ++j) {
      const int64_t n = shards_[g.shards[j]].numel();
      for (const at::Tensor& t : states[j]) {
        if (!t.defined() || t.numel() != n) {
          return absl::InternalError("OptimizerSwapper: a state tensor of the wrong size");
        }
        // Views of this buffer (swapped in earlier) are in place already.
        if (t.data_ptr<float>() != data + offset) {
          at::from_blob(data + offset, {n}, at::TensorOptions().dtype(at::kFloat))
              .copy_(t.reshape({-1}));
        }
        offset += n;
      }
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, "packing optimizer state");
  }
  // The optimizer lets go of the state; the buffer holds it until the write is done.
  for (torch::optim::OptimizerParamState* object : objects) {
    const std::vector<at::Tensor> none(static_cast<size_t>(states_per_element_));
    StateTensors(object, nullptr, &none);
  }
  g.writing = space_.engine->WriteAsync(g.file, g.buffer->data(), g.bytes);
  g.on_disk = true;
  return absl::OkStatus();
}

absl::Status OptimizerSwapper::FinishWrite(SubGroup& g) {
  if (!g.writing.valid()) return absl::OkStatus();
  absl::Status s = g.writing.get();
  if (g.on_disk) g.buffer.reset();
  return s;
}

absl::Status OptimizerSwapper::FinishAllWrites() {
  absl::Status first = absl::OkStatus();
  for (SubGroup& g : groups_) {
    absl::Status s = FinishWrite(g);
    if (first.ok()) first = s;
  }
  return first;
}

absl::Status OptimizerSwapper::Step(const std::function<absl::Status()>& step_subgroup) {
  return ForEachSubGroup([&](const std::vector<size_t>&) { return step_subgroup(); },
                         /*dirty=*/true);
}

void OptimizerSwapper::LetGo(SubGroup& g) {
  for (size_t i : g.shards) {
    auto it = optimizer_->state().find(optim::ParamStateKey(shards_[i]));
    if (it == optimizer_->state().end()) continue;
    const std::vector<at::Tensor> none(static_cast<size_t>(states_per_element_));
    StateTensors(it->second.get(), nullptr, &none);
  }
  g.buffer.reset();
  g.on_disk = true;
}

absl::Status OptimizerSwapper::ForEachSubGroup(
    const std::function<absl::Status(const std::vector<size_t>&)>& fn, bool dirty) {
  auto& param_groups = optimizer_->param_groups();
  std::vector<std::vector<at::Tensor>> saved;
  for (auto& pg : param_groups) saved.push_back(pg.params());
  const int64_t behind = std::max<int64_t>(0, options_.buffer_count - 2);
  absl::Status status = absl::OkStatus();
  for (size_t i = 0; i < groups_.size() && status.ok(); ++i) {
    if (i == 0) status.Update(StartRead(groups_[0]));
    if (i + 1 < groups_.size()) status.Update(StartRead(groups_[i + 1]));  // read-ahead
    const bool read_in = groups_[i].on_disk;
    status.Update(FinishRead(groups_[i]));
    if (!status.ok()) break;
    // The optimizer sees this sub-group's shards only.
    std::set<const c10::TensorImpl*> mine;
    for (size_t k : groups_[i].shards) mine.insert(shards_[k].unsafeGetTensorImpl());
    for (size_t p = 0; p < param_groups.size(); ++p) {
      std::vector<at::Tensor> narrowed;
      for (const at::Tensor& t : saved[p]) {
        if (mine.count(t.unsafeGetTensorImpl()) > 0) narrowed.push_back(t);
      }
      param_groups[p].params() = std::move(narrowed);
    }
    // Whatever fn does, the optimizer gets its whole groups back.
    try {
      status.Update(fn(groups_[i].shards));
    } catch (const std::exception& e) {
      status.Update(base::TorchErrorToStatus(
          e, absl::StatusCode::kInternal,
          absl::StrCat("sub-group ", i, " of ", space_.folder->path())));
    }
    for (size_t p = 0; p < param_groups.size(); ++p) param_groups[p].params() = saved[p];
    if (!dirty) {
      if (read_in) LetGo(groups_[i]);
      continue;
    }
    status.Update(StartWrite(groups_[i]));  // write-behind
    if (static_cast<int64_t>(i) >= behind) {
      status.Update(FinishWrite(groups_[i - static_cast<size_t>(behind)]));
    }
  }
  for (auto& g : groups_) {
    if (g.reading.valid()) g.reading.wait();  // a read-ahead left by an error
  }
  status.Update(FinishAllWrites());
  return status;
}

absl::Status OptimizerSwapper::SwapInAll() {
  for (SubGroup& g : groups_) RETURN_IF_ERROR(StartRead(g));
  for (SubGroup& g : groups_) RETURN_IF_ERROR(FinishRead(g));
  return absl::OkStatus();
}

absl::Status OptimizerSwapper::SwapOutAll() {
  for (SubGroup& g : groups_) RETURN_IF_ERROR(StartWrite(g));
  return FinishAllWrites();
}

}  // namespace loom::sharding
