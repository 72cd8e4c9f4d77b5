#include "distributed/collectives.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "distributed/peer_check.h"

namespace loom::distributed {
namespace {

// Most dims a gathered tensor may have (the shape check sends a fixed-size header).
constexpr int kMaxDims = 8;

// How long a failing rank waits for its peers to report the same failure (peer_check.h).
constexpr absl::Duration kPeerReportGrace = absl::Seconds(2);

}  // namespace

absl::Status CollectiveFailure(const std::exception& e, absl::string_view what,
                               const ProcessGroup& pg) {
  const std::string message = base::TorchErrorMessage(e);
  const bool timed_out =
      absl::StrContains(message, "imed out") || absl::StrContains(message, "imeout");
  const absl::Status failure = base::TorchErrorToStatus(
      e, timed_out ? absl::StatusCode::kDeadlineExceeded : absl::StatusCode::kUnavailable,
      absl::StrCat(what, " on rank ", pg.rank(), " of ", pg.world_size(), " (", pg.backend_name(),
                   ", ddp_timeout=", absl::FormatDuration(pg.timeout()), ")"));
  // Only a failure of the transport (or a timeout) can be a peer's doing; a local error (an
  // allocation) is reported as it is.
  const bool transport = absl::StrContains(message, "gloo/transport") ||
                         absl::StrContains(message, "NCCL") ||
                         absl::StrContains(message, "ncclRemoteError");
  if (!timed_out && !transport) return failure;
  const std::string peers = UnresponsivePeers(pg, kPeerReportGrace);
  if (peers.empty()) return failure;
  return absl::Status(failure.code(), absl::StrCat(failure.message(), "; ", peers));
}

namespace {

// `t` as the backend takes it: contiguous, on the group's device (itself when it already is).
at::Tensor ForBackend(const ProcessGroup& pg, const at::Tensor& t) {
  return t.to(pg.comm_device()).contiguous();
}

// Gloo (LibTorch 1.13) has no bfloat16: collectives that only move bytes see bf16 tensors as
// float16 of the same bits (Gloo only copies them; it has no int16 either); other tensors as
// they are.
bool BitsOnly(const ProcessGroup& pg, const at::Tensor& t) {
  return t.scalar_type() == at::kBFloat16 && pg.backend_name() == "gloo";
}
at::Tensor Wire(const ProcessGroup& pg, const at::Tensor& t) {
  return BitsOnly(pg, t) ? t.view(at::kHalf) : t;
}

absl::Status AllGatherRaw(ProcessGroup& pg, const at::Tensor& tensor, std::vector<at::Tensor>& out,
                          absl::string_view what) {
  out.clear();
  try {
    const at::Tensor input = ForBackend(pg, tensor);
    for (int r = 0; r < pg.world_size(); ++r) out.push_back(at::empty_like(input));
    std::vector<std::vector<at::Tensor>> outputs = {{}};
    for (const at::Tensor& o : out) outputs[0].push_back(Wire(pg, o));
    std::vector<at::Tensor> inputs = {Wire(pg, input)};
    pg.backend().allgather(outputs, inputs)->wait();
    for (at::Tensor& o : out) o = o.to(tensor.device());
  } catch (const std::exception& e) {
    return CollectiveFailure(e, what, pg);
  }
  return absl::OkStatus();
}

// Gathers every rank's dtype and shape; `vary_dim0` allows dim 0 to differ.
absl::StatusOr<std::vector<int64_t>> CheckShapes(ProcessGroup& pg, const at::Tensor& t,
                                                 bool vary_dim0, absl::string_view what) {
  if (t.dim() > kMaxDims) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": tensors of at most ", kMaxDims, " dims, got ", t.dim()));
  }
  if (vary_dim0 && t.dim() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": needs at least one dim (the variable one), got a scalar"));
  }
  at::Tensor header = at::full({2 + kMaxDims}, -1, at::kLong);
  header[0] = static_cast<int64_t>(t.scalar_type());
  header[1] = t.dim();
  for (int d = 0; d < t.dim(); ++d) header[2 + d] = t.size(d);
  std::vector<at::Tensor> headers;
  RETURN_IF_ERROR(AllGatherRaw(pg, header, headers, what));
  std::vector<int64_t> dim0(pg.world_size());
  for (int r = 0; r < pg.world_size(); ++r) {
    at::Tensor h = headers[r];
    at::Tensor mine = header.clone();
    at::Tensor theirs = h.clone();
    dim0[r] = t.dim() > 0 ? h[2].item<int64_t>() : 0;
    if (vary_dim0) {
      mine[2] = 0;
      theirs[2] = 0;
    }
    if (!at::equal(mine, theirs)) {
      auto describe = [](const at::Tensor& x) {
        std::vector<int64_t> dims;
        for (int64_t d = 0; d < x[1].item<int64_t>(); ++d) dims.push_back(x[2 + d].item<int64_t>());
        return absl::StrCat(c10::toString(static_cast<at::ScalarType>(x[0].item<int64_t>())), "[",
                            absl::StrJoin(dims, ", "), "]");
      };
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": rank ", pg.rank(), " has ", describe(header), " but rank ", r,
                       " has ", describe(h),
                       vary_dim0 ? "; only dim 0 may differ between ranks"
                                 : "; every rank must pass the same shape and dtype (use "
                                   "AllGatherVariableLength when dim 0 differs)"));
    }
  }
  return dim0;
}

// Chunk i (mod world) of a flat tensor cut into `world` chunks of `chunk` elements.
at::Tensor RingChunk(const at::Tensor& flat, int64_t chunk, int world, int i) {
  return flat.slice(0, (i % world) * chunk, (i % world + 1) * chunk);
}

// One step of the ring: sends `out_chunk` to `next` and adds what `prev` sends into `in_chunk`,
// in pieces of piece_len elements through the two `incoming` buffers, the next piece's receive
// posted before the last is added. Tags are unique per (step, piece) in one call. Throws what
// c10d throws, after its sends (which still read `out_chunk`) have finished or failed.
void RingStep(ProcessGroup& pg, int step, const at::Tensor& out_chunk, at::Tensor& in_chunk,
              at::Tensor (&incoming)[2], int64_t piece_len, int next, int prev) {
  const int64_t chunk = out_chunk.numel();
  const int64_t pieces = (chunk + piece_len - 1) / piece_len;
  const auto range = [&](int64_t i) {
    return std::make_pair(i * piece_len, std::min(chunk, (i + 1) * piece_len));
  };
  const auto tag = [&](int64_t i) { return static_cast<int>(step * pieces + i); };
  std::vector<c10::intrusive_ptr<::c10d::Work>> sends;
  const auto post_recv = [&](int64_t i) {
    auto [a, b] = range(i);
    std::vector<at::Tensor> recv = {Wire(pg, incoming[i % 2].slice(0, 0, b - a))};
    return pg.backend().recv(recv, prev, tag(i));
  };
  try {
    for (int64_t i = 0; i < pieces; ++i) {
      auto [a, b] = range(i);
      std::vector<at::Tensor> send = {Wire(pg, out_chunk.slice(0, a, b))};
      sends.push_back(pg.backend().send(send, next, tag(i)));
    }
    c10::intrusive_ptr<::c10d::Work> pending = post_recv(0);
    for (int64_t i = 0; i < pieces; ++i) {
      pending->wait();
      if (i + 1 < pieces) pending = post_recv(i + 1);
      auto [a, b] = range(i);
      in_chunk.slice(0, a, b).add_(incoming[i % 2].slice(0, 0, b - a));
    }
  } catch (...) {
    // The sends still read `flat`: let them finish (or fail) before the error unwinds.
    for (auto& w : sends) {
      try {
        w->wait();
      } catch (...) {
      }
    }
    throw;
  }
  for (auto& w : sends) w->wait();
}

// Ring reduce-scatter over Gloo's send/recv: at step s rank r sends its partial sum of chunk
// (r - s - 1) to rank r + 1 and adds what rank r - 1 sends of chunk (r - s - 2); after N - 1
// steps chunk r is complete. Each chunk travels in pieces of at most kPiece elements through one
// small receive buffer (no chunk-sized allocation). Throws what c10d throws.
void RingReduceScatter(ProcessGroup& pg, const at::Tensor& flat, at::Tensor& out) {
  const int world = pg.world_size();
  const int rank = pg.rank();
  const int64_t chunk = flat.numel() / world;
  constexpr int64_t kPiece = int64_t{1} << 20;
  const int64_t piece_len = std::min(chunk, kPiece);
  at::Tensor incoming[2] = {at::empty({piece_len}, flat.options()),
                            at::empty({piece_len}, flat.options())};
  const int next = (rank + 1) % world;
  const int prev = (rank + world - 1) % world;
  for (int s = 0; s < world - 1; ++s) {
    const at::Tensor out_chunk = RingChunk(flat, chunk, world, rank - s - 1 + 2 * world);
    at::Tensor in_chunk = RingChunk(flat, chunk, world, rank - s - 2 + 2 * world);
    RingStep(pg, s, out_chunk, in_chunk, incoming, piece_len, next, prev);
  }
  out.copy_(RingChunk(flat, chunk, world, rank));
}

}  // namespace

absl::Status AllReduce(ProcessGroup& pg, at::Tensor& tensor, ReduceOp op) {
  if (op == ReduceOp::kAvg && !at::isFloatingType(tensor.scalar_type())) {
    return absl::InvalidArgumentError(
        absl::StrCat("AllReduce(kAvg) needs a floating-point tensor, got ",
                     c10::toString(tensor.scalar_type()), "; use kSum and divide yourself"));
  }
  try {
    at::Tensor work_tensor = ForBackend(pg, tensor);
    // Gloo cannot add bf16: the sum runs in fp32 and is rounded back once.
    if (BitsOnly(pg, work_tensor)) work_tensor = work_tensor.to(at::kFloat);
    std::vector<at::Tensor> tensors = {work_tensor};
    ::c10d::AllreduceOptions options;
    options.reduceOp = ::c10d::ReduceOp::SUM;
    pg.backend().allreduce(tensors, options)->wait();
    if (op == ReduceOp::kAvg) work_tensor.div_(pg.world_size());
    if (!work_tensor.is_same(tensor)) tensor.copy_(work_tensor);
  } catch (const std::exception& e) {
    return CollectiveFailure(e, "AllReduce", pg);
  }
  return absl::OkStatus();
}

absl::Status Broadcast(ProcessGroup& pg, at::Tensor& tensor, int src_rank) {
  if (src_rank < 0 || src_rank >= pg.world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Broadcast: src_rank ", src_rank, " is not in [0, ", pg.world_size(), ")"));
  }
  try {
    at::Tensor work_tensor = ForBackend(pg, tensor);
    std::vector<at::Tensor> tensors = {Wire(pg, work_tensor)};
    ::c10d::BroadcastOptions options;
    options.rootRank = src_rank;
    pg.backend().broadcast(tensors, options)->wait();
    if (!work_tensor.is_same(tensor)) tensor.copy_(work_tensor);
  } catch (const std::exception& e) {
    return CollectiveFailure(e, "Broadcast", pg);
  }
  return absl::OkStatus();
}

absl::Status Barrier(ProcessGroup& pg) {
  try {
    pg.backend().barrier()->wait();
  } catch (const std::exception& e) {
    return CollectiveFailure(e, "Barrier", pg);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<at::Tensor>> AllGather(ProcessGroup& pg, const at::Tensor& tensor) {
  RETURN_IF_ERROR(CheckShapes(pg, tensor, /*vary_dim0=*/false, "AllGather").status());
  std::vector<at::Tensor> out;
  RETURN_IF_ERROR(AllGatherRaw(pg, tensor.contiguous(), out, "AllGather"));
  return out;
}

absl::StatusOr<std::vector<at::Tensor>> AllGatherVariableLength(ProcessGroup& pg,
                                                                const at::Tensor& tensor) {
  ASSIGN_OR_RETURN(std::vector<int64_t> lengths,
                   CheckShapes(pg, tensor, /*vary_dim0=*/true, "AllGatherVariableLength"));
  const int64_t max_len = *std::max_element(lengths.begin(), lengths.end());
  std::vector<at::Tensor> out;
  try {
    std::vector<int64_t> padded_shape = tensor.sizes().vec();
    padded_shape[0] = max_len;
    at::Tensor padded = at::zeros(padded_shape, tensor.options());
    padded.narrow(0, 0, tensor.size(0)).copy_(tensor);
    RETURN_IF_ERROR(AllGatherRaw(pg, padded, out, "AllGatherVariableLength"));
    for (int r = 0; r < pg.world_size(); ++r) out[r] = out[r].narrow(0, 0, lengths[r]).clone();
  } catch (const std::exception& e) {
    return CollectiveFailure(e, "AllGatherVariableLength", pg);
  }
  return out;
}

absl::Status AllGatherInto(ProcessGroup& pg, const at::Tensor& input, at::Tensor& flat) {
  const int64_t n = input.numel();
  if (flat.dim() != 1 || !flat.is_contiguous() || flat.numel() != n * pg.world_size() ||
      flat.scalar_type() != input.scalar_type()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AllGatherInto: the output must be a contiguous 1-D ", c10::toString(input.scalar_type()),
        " tensor of ", n * pg.world_size(), " elements (world size x input), got ", flat.toString(),
        " of ", flat.numel()));
  }
  try {
    const int world = pg.world_size();
    const int rank = pg.rank();
    const auto slice = [&](int i) {
      const int r = ((i % world) + world) % world;
      return flat.slice(0, r * n, (r + 1) * n);
    };
    if (pg.backend_name() != "gloo" || !flat.device().is_cpu()) {
      std::vector<at::Tensor> slices;
      for (int r = 0; r < world; ++r) slices.push_back(Wire(pg, slice(r)));
      std::vector<std::vector<at::Tensor>> outputs = {slices};
      std::vector<at::Tensor> inputs = {Wire(pg, input.contiguous().view({-1}))};
      pg.backend().allgather(outputs, inputs)->wait();
      return absl::OkStatus();
    }
    // Gloo: a ring of send/recv straight into the output's slices (c10d's Gloo all-gather
    // stages everything through a flat buffer of its own and copies it out again). At step s
    // rank r passes chunk (r - s) on to rank r + 1 and receives chunk (r - s - 1).
    slice(rank).copy_(input.reshape({-1}));
    const int next = (rank + 1) % world;
    const int prev = (rank + world - 1) % world;
    for (int s = 0; s < world - 1; ++s) {
      std::vector<at::Tensor> send = {Wire(pg, slice(rank - s))};
      std::vector<at::Tensor> recv = {Wire(pg, slice(rank - s - 1))};
      auto recv_work = pg.backend().recv(recv, prev, /*tag=*/s);
      auto send_work = pg.backend().send(send, next, /*tag=*/s);
      try {
        recv_work->wait();
      } catch (...) {
        try {
          send_work->wait();
        } catch (...) {
        }
        throw;
      }
      send_work->wait();
    }
  } catch (const std::exception& e) {
    return CollectiveFailure(e, "AllGatherInto", pg);
  }
  return absl::OkStatus();
}

PendingCollective& PendingCollective::operator=(PendingCollective&& other) {
  if (this != &other) {
    Wait().IgnoreError();
    pg_ = other.pg_;
    work_ = std::move(other.work_);
    what_ = std::move(other.what_);
  }
  return *this;
}

PendingCollective::~PendingCollective() { Wait().IgnoreError(); }

absl::Status PendingCollective::Wait() {
  if (!work_.defined()) return absl::OkStatus();
  WorkPtr work = std::move(work_);
  work_.reset();
  try {
    work->wait();
  } catch (const std::exception& e) {
    return CollectiveFailure(e, what_, *pg_);
  }
  return absl::OkStatus();
}

absl::StatusOr<PendingCollective> StartAllGatherInto(ProcessGroup& pg, const at::Tensor& input,
                                                     at::Tensor& flat) {
  const int64_t n = input.numel();
  if (flat.dim() != 1 || !flat.is_contiguous() || flat.numel() != n * pg.world_size() ||
      flat.scalar_type() != input.scalar_type() || !input.is_contiguous() ||
      input.device() != flat.device() || flat.device() != pg.comm_device()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "StartAllGatherInto: needs a contiguous input on the group's device and a contiguous 1-D ",
        c10::toString(input.scalar_type()), " output of ", n * pg.world_size(),
        " elements there, got ", flat.toString(), " of ", flat.numel()));
  }
  try {
    std::vector<at::Tensor> slices;
    for (int r = 0; r < pg.world_size(); ++r)
      slices.push_back(Wire(pg, flat.slice(0, r * n, (r + 1) * n)));
    std::vector<std::vector<at::Tensor>> outputs = {slices};
    std::vector<at::Tensor> inputs = {Wire(pg, input.view({-1}))};
    return PendingCollective(&pg, pg.backend().allgather(outputs, inputs), "StartAllGatherInto");
  } catch (const std::exception& e) {
    return CollectiveFailure(e, "StartAllGatherInto", pg);
  }
}

absl::Status ReduceScatterSum(ProcessGroup& pg, at::Tensor& flat, at::Tensor& out) {
  const int world = pg.world_size();
  if (flat.dim() != 1 || !flat.is_contiguous() || flat.numel() % world != 0 ||
      out.numel() != flat.numel() / world || out.scalar_type() != flat.scalar_type()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ReduceScatterSum: needs a contiguous 1-D input whose numel (", flat.numel(),
        ") divides by the world size (", world, ") and an output of numel / world of its dtype"));
  }
  try {
    if (world == 1) {
      out.copy_(flat);
    } else if (pg.backend_name() != "gloo") {
      const int64_t chunk = flat.numel() / world;
      std::vector<at::Tensor> outputs = {out};
      std::vector<std::vector<at::Tensor>> inputs = {{}};
      for (int i = 0; i < world; ++i) inputs[0].push_back(RingChunk(flat, chunk, world, i));
      pg.backend().reduce_scatter(outputs, inputs)->wait();
    } else {
      RingReduceScatter(pg, flat, out);
    }
  } catch (const std::exception& e) {
    return CollectiveFailure(e, "ReduceScatterSum", pg);
  }
  return absl::OkStatus();
}

absl::Status BroadcastString(ProcessGroup& pg, std::string& value, int src_rank) {
  at::Tensor length = at::tensor({static_cast<int64_t>(value.size())}, at::kLong);
  RETURN_IF_ERROR_CTX(Broadcast(pg, length, src_rank), "BroadcastString (length)");
  at::Tensor bytes = at::zeros({length.item<int64_t>()}, at::kByte);
  if (pg.rank() == src_rank && !value.empty()) {
    std::memcpy(bytes.data_ptr<uint8_t>(), value.data(), value.size());
  }
  RETURN_IF_ERROR_CTX(Broadcast(pg, bytes, src_rank), "BroadcastString");
  value.assign(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), bytes.numel());
  return absl::OkStatus();
}

}  // namespace loom::distributed
