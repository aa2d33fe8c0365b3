#include "generator/check/kernel_check.hpp"

#include "generator/check/image_sample.hpp"

#include "runtime/cpu/backend.hpp"
#include "runtime/cpu/ops.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/half.hpp"
#include "runtime/io/file.hpp"
#include "runtime/json_util.hpp"
#include "runtime/layout_order.hpp"
#include "runtime/ops/batchnorm_chunks.hpp"
#include "runtime/ops/registry.hpp"
#include "runtime/param_init.hpp"
#include "runtime/sparse_form.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

namespace kiln {

namespace {

// A standalone activation other than relu (hardswish, clip, ...): its forward function names
// the activation a fused epilogue would apply.
bool is_activation_op(OpKind op) {
  if (op == OpKind::relu) return false;
  const std::string forward = std::string(op_name(op)) + ".forward";
  for (const FnDef* d : registered_fns())
    if (d->name == forward) return d->activation != nullptr;
  return false;
}

bool writes(const Step& s, const std::string& role) { return fn_writes(s.fn, role); }

// Values a role may hold: variances and inverse deviations positive, targets valid classes,
// optimizer step counts from 1.
Tensor random_for(const Plan& p, const Step& s, const std::string& role, const Buffer& b,
                  uint64_t seed) {
  Tensor t(b.dtype, b.shape);
  uint64_t st = seed ^ fnv1a(role) ^ fnv1a(b.name);
  const int64_t n = t.numel();
  if (b.dtype == DType::i64) {
    const int bl = s.arg("logits") >= 0 ? s.arg("logits") : s.arg("probs");
    const int64_t classes = bl >= 0 ? p.buffers[bl].shape[1] : 2;
    for (int64_t i = 0; i < n; ++i)
      t.set(i, double(splitmix64(st) % uint64_t(classes)));
    return t;
  }
  // A teacher's logits and an optimizer's tensors get a stream of their own even where a
  // buffer is named after its role (the kernel tests' one-step plans), so that the target
  // differs from the logits and the gradient from the parameter.
  if (role == "target" || s.fn == Fn::sgd_update || s.fn == Fn::adam_update)
    st ^= fnv1a(role) * 0x9e3779b97f4a7c15ull;
  if (b.dtype == DType::i32 && role == "step") { // an optimizer's update count, from 1
    t.set(0, double(1 + splitmix64(st) % 20));
    return t;
  }
  if (!is_float(b.dtype)) return t; // compacted forms and counts: set by check_step
  // Adam's second moment is a running mean of squares.
  const bool positive =
      role == "running_var" || role == "invstd" || (s.fn == Fn::adam_update && role == "v");
  // The activations bend away from 0 (hardswish at -3 and 3, ReLU6 at 6, ...): a standalone
  // activation's input spans its pieces.
  const double span = role == "x" && is_activation_op(s.op) ? 8 : 1;
  for (int64_t i = 0; i < n; ++i) {
    const double u = double(splitmix64(st) >> 11) * 0x1.0p-53;
    double v = positive ? 0.5 + u : (role == "probs" ? u : span * (2 * u - 1));
    // A fused relu's output (a masked batchnorm backward's relu_y) as a relu writes it: half
    // exact zeros, the mask's edge.
    if (role == "relu_y") v = std::max(0.0, v);
    // A tf32 buffer holds rounded values (its writer rounds them): its readers may rely on it.
    t.set(i, b.tf32 ? double(round_to_tf32(float(v))) : v);
  }
  return t;
}

Tensor poisoned(const Buffer& b) {
  Tensor t(b.dtype, b.shape);
  if (!is_float(b.dtype) || t.numel() == 0) {
    std::memset(t.bytes(), 0xff, t.nbytes()); // counts past any slice: a form that fails
    return t;
  }
  // One NaN, copied over (a batch-256 output has 10^8 elements).
  t.set(0, std::numeric_limits<double>::quiet_NaN());
  const size_t size = t.nbytes() / size_t(t.numel());
  for (size_t done = size; done < t.nbytes(); done *= 2)
    std::memcpy(t.bytes() + done, t.bytes(), std::min(done, t.nbytes() - done));
  return t;
}

// A random tensor with `density` nonzeros (uniform in +-[0.1, 1]); with `negatives`, the
// zeros are negative numbers instead (what relu turns into zeros).
Tensor sparse_random(const Shape& shape, double density, uint64_t seed, bool negatives) {
  Tensor t(DType::f64, shape);
  uint64_t st = seed ^ 0x5eed5a5e;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double u = double(splitmix64(st) >> 11) * 0x1.0p-53;
    const double m = 0.1 + 0.9 * double(splitmix64(st) >> 11) * 0x1.0p-53;
    const bool nonzero = u < density;
    const bool negative = splitmix64(st) & 1;
    t.set(i, nonzero ? (negatives || !negative ? m : -m) : negatives ? -m : 0.0);
  }
  return t;
}

// The compacted form of a dense f64 tensor: values (f64), index, count; the nonzero total.
struct Compacted {
  Tensor values, index, count;
  int64_t nnz = 0;
};
Compacted compacted(const Tensor& x, int64_t cs) {
  const SparseForm f = SparseForm::of(x.shape(), cs);
  Compacted c{Tensor(DType::f64, f.values_shape()), Tensor(DType::u8, f.values_shape()),
              Tensor(DType::u8, f.count_shape()), 0};
  c.nnz = cpu::compact<double>(cpu::CView<double>{x.as<double>().data(), x.shape()},
                               c.values.as<double>().data(), c.index.as<uint8_t>().data(),
                               c.count.as<uint8_t>().data(), cs);
  return c;
}

// A compacted form read back from a backend, as the dense tensor it stands for.
Tensor decompacted(const Tensor& values, const Tensor& index, const Tensor& count, const Shape& x) {
  Tensor dense(DType::f64, x);
  const Tensor v = values.to(DType::f64);
  cpu::decompact<double>(v.as<double>().data(), index.as<uint8_t>().data(),
                         count.as<uint8_t>().data(), values.shape()[2],
                         cpu::View<double>{dense.as<double>().data(), x});
  return dense;
}

// The nnz a guarded step must read to run: its own count when that passes, else the
// nearest count that does.
int64_t passing_nnz(const Step& s, int64_t nnz) {
  if (s.sparse.guard == Guard::dense) return std::max(nnz, s.sparse.threshold + 1);
  if (s.sparse.guard == Guard::sparse) return std::min(nnz, s.sparse.threshold);
  return nnz;
}

} // namespace

double tolerance_for(const Plan& p, const Step& s, const std::string& math) {
  bool half = math == "fp16" || math == "bf16";
  for (const Arg& a : s.args)
    half |= p.buffers[a.buffer].dtype == DType::f16 || p.buffers[a.buffer].dtype == DType::bf16;
  if (half) return 1e-2;
  // An output rounded to tf32 (Buffer::tf32: a conv's epilogue rounding for tf32 readers) may
  // land one tf32 step (2^-10 of the value) from the reference's own rounding of a value a
  // little different: that on top of the computation's tolerance.
  bool rounded_out = false;
  for (const Arg& a : s.args)
    rounded_out |= p.buffers[a.buffer].tf32 && fn_writes(s.fn, a.role);
  const double rounding = rounded_out ? 0x1p-10 : 0.0;
  if (math == "tf32") return 5e-4 + rounding;
  return 1e-5 + rounding;
}

Plan single_step_plan(const Plan& p, const Step& step, const Kernel* kernel, bool f64,
                      int64_t images) {
  Plan m;
  m.model = p.model;
  m.gpu = p.gpu;
  m.arch = f64 ? "" : p.arch;
  m.kiln_version = p.kiln_version;
  m.dtype = f64 ? DType::f64 : p.dtype;
  Step s = step;
  // A kernel's tensor maps (roles xmap0.., wmap): the device plan writes them in its prepare
  // phase as the whole plan does, over its own buffers; the reference ignores them (inputs
  // there, so that both plans number their buffers alike).
  const auto is_map = [&](const Arg& a) {
    return kernel && !f64 && p.buffers[a.buffer].role == BufferRole::derived &&
           p.buffers[a.buffer].dtype == DType::u8;
  };
  std::vector<Step> encodes;
  std::map<int, int> remap;
  std::vector<std::pair<int, int>> pitched_bases; // (view here, its base in p)
  int64_t offset = 0;
  for (Arg& a : s.args) {
    auto it = remap.find(a.buffer);
    if (it == remap.end()) {
      Buffer b = p.buffers[a.buffer];
      // A view becomes a buffer of its own here; a pitched one (which its kernel writes
      // through its pitch) stays a window of a base of its own in the device plan, added
      // after the step's buffers (both plans number those alike).
      const bool pitched = b.view_pitch > 0 && kernel && !f64;
      if (pitched) pitched_bases.push_back({int(m.buffers.size()), p.base(a.buffer)});
      b.view_of = -1;
      if (!pitched) b.view_offset = 0, b.view_pitch = 0;
      const bool w = writes(step, a.role);
      const bool map = is_map(a);
      b.role = map                     ? BufferRole::derived
               : b.dtype == DType::i64 ? BufferRole::target
               : w ? (step.fn == Fn::sgd_update ? BufferRole::param : BufferRole::output)
                   : BufferRole::input;
      if (map)
        if (const Phase* prep = p.phase("prepare"))
          for (const Step& e : prep->steps)
            if (e.fn == Fn::tensor_map_encode && e.need("map") == a.buffer) {
              encodes.push_back(e);
              encodes.back().args = {{"map", int(m.buffers.size())}};
            }
      if (f64 && is_float(b.dtype)) b.dtype = DType::f64, b.layout = Layout::nchw;
      if (images > 0 && per_image_role(step.fn, a.role)) b.shape[0] = images;
      b.offset = offset;
      offset += ((pitched ? p.buffers[p.base(a.buffer)].bytes() : b.bytes()) + 255) / 256 * 256;
      m.buffers.push_back(b);
      it = remap.emplace(a.buffer, int(m.buffers.size()) - 1).first;
      if (b.role == BufferRole::output) m.outputs.push_back(it->second);
      if (b.role == BufferRole::input) m.inputs.push_back(it->second);
      if (b.role == BufferRole::target) m.target = it->second;
      if (b.role == BufferRole::param) m.params.push_back({b.name, it->second, -1, 0, 0});
    }
    a.buffer = it->second;
  }
  for (auto [view, base] : pitched_bases) { // the view's memory, as its base
    Buffer b = p.buffers[base];
    b.name = m.buffers[view].name + ".base";
    // An input's base is live from the start, as the input is; an output's is written.
    b.role = m.buffers[view].role == BufferRole::input ? BufferRole::input : BufferRole::activation;
    b.offset = m.buffers[view].offset;
    m.buffers.push_back(b);
    m.buffers[view].view_of = int(m.buffers.size()) - 1;
  }
  if (kernel && !f64) {
    m.kernels.push_back(*kernel);
    s.kind = StepKind::launch;
    s.kernel = 0;
  } else {
    s.kind = StepKind::reference;
    s.kernel = -1;
  }
  // The loss output of softmax_xent.forward is a [1] buffer: keep its role an output.
  m.arena_bytes = offset;
  if (!encodes.empty()) m.phases.push_back(Phase{"prepare", std::move(encodes)});
  m.phases.push_back(Phase{"forward", {s}});
  validate_plan(m);
  return m;
}

KernelCheck check_step(const Plan& plan, const Step& step, const Kernel& k, const std::string& math,
                       const BackendFactory& device, uint64_t seed, const CheckOptions& o) {
  KernelCheck row;
  row.kernel = k.name;
  row.node = step.node;
  row.tolerance = tolerance_for(plan, step, math);
  const double density = o.density;
  try {
    // The images the reference computes (all: none picked), and a role's values for it.
    const SampledImages sample = sampled_images(plan, step, o.images, seed);
    const std::vector<int64_t>& picked = sample.picked;
    const auto for_reference = [&](const std::string& role, const Tensor& t, DType d) {
      return picked.empty() || !per_image_role(step.fn, role) ? t.to(d)
                                                              : images_of(t, picked).to(d);
    };
    if (!picked.empty()) row.images = int64_t(picked.size()), row.batch = sample.batch;
    const Plan dev_plan = single_step_plan(plan, step, &k, false);
    const Plan ref_plan = single_step_plan(plan, step, nullptr, true, int64_t(picked.size()));
    std::unique_ptr<Backend> dev_backend = device();
    cpu::CpuBackend ref_backend;
    Executor dev(dev_plan, *dev_backend), ref(ref_plan, ref_backend);
    const Step& ds = dev_plan.phase("forward")->steps[0]; // after a prepare phase, if any
    const double d = density >= 0 ? density : step.sparse.density >= 0 ? step.sparse.density : 0.5;
    // A compacted input: the form of a random tensor with d nonzeros (x holds that tensor).
    std::optional<Compacted> sparse_in;
    Tensor sparse_x;
    if (fn_reads(ds.fn, "values")) {
      const Buffer& xb = dev_plan.buffers[ds.need("x")];
      sparse_x = sparse_random(xb.shape, d, seed ^ fnv1a("x"), false);
      sparse_in = compacted(sparse_x, dev_plan.buffers[ds.need("values")].shape[2]);
    }
    // A compacted output: of x (sparse.compact) or of the producer's y.
    const FormRoles* out_form = ds.fn == Fn::sparse_compact    ? &kFormOfX
                                : ds.arg(kFormOfY.values) >= 0 ? &kFormOfY
                                                               : nullptr;
    const bool writes_form = out_form != nullptr;
    const int32_t nnz_before = 7; // a compaction adds to what its count holds
    // A batchnorm reading chunk sums: those of its x (and dy, masked by relu_y), as
    // batchnorm.partials writes them (random ones would describe another tensor).
    const bool reads_chunk_sums =
        ds.arg("partial") >= 0 && ds.fn != Fn::batchnorm_partials &&
        (ds.fn == Fn::batchnorm_forward_train || ds.fn == Fn::batchnorm_backward);
    std::map<std::string, Tensor> written; // x and dy of a step reading chunk sums
    for (const Arg& a : ds.args) {
      const Buffer& b = dev_plan.buffers[a.buffer];
      if (b.role == BufferRole::derived) { // a tensor map: the device's prepare phase writes it
        ref.write(a.buffer, Tensor(b.dtype, b.shape));
        continue;
      }
      const bool out =
          b.role == BufferRole::output || (b.role == BufferRole::param && ds.fn == Fn::sgd_update);
      // A slice of a wide concat leaves the rest of y as it was: give it data too.
      const bool needs_data = !out || ds.accumulate || ds.fn == Fn::sgd_update ||
                              ds.fn == Fn::concat_forward || ds.fn == Fn::region_copy ||
                              fn_updates(ds.fn, a.role);
      Tensor t = needs_data ? random_for(dev_plan, ds, a.role, b, seed) : poisoned(b);
      if (sparse_in && a.role == "x") t = sparse_x.to(b.dtype);
      if (sparse_in && a.role == "values") t = sparse_in->values.to(b.dtype);
      if (sparse_in && a.role == "index") t = sparse_in->index;
      if (sparse_in && a.role == "count") t = sparse_in->count;
      if (writes_form && a.role == "x" && ds.fn == Fn::sparse_compact)
        t = sparse_random(b.shape, d, seed ^ fnv1a("x"), false).to(b.dtype);
      if (writes_form && a.role == "x" && ds.fn == Fn::relu_forward)
        t = sparse_random(b.shape, d, seed ^ fnv1a("x"), true).to(b.dtype);
      if (a.role ==
          "tickets") { // an in-kernel split's counters: zero, as the prepare phase leaves them
        t = Tensor(DType::i32, b.shape);
      } else if (out_form && a.role == out_form->nnz) {
        t = Tensor(DType::i32, {1});
        t.set(0, nnz_before);
      } else if (a.role == "nnz") { // a guard's
        t = Tensor(DType::i32, {1});
        t.set(0, double(passing_nnz(ds, sparse_in ? sparse_in->nnz : numel(b.shape))));
      }
      dev.write(a.buffer, to_memory_order(t, b.layout));
      // Same values, exactly (of the images it computes).
      ref.write(a.buffer, for_reference(a.role, t, ref_plan.buffers[a.buffer].dtype));
      if (reads_chunk_sums && (a.role == "x" || a.role == "dy" || a.role == "relu_y"))
        written.emplace(a.role, t);
    }
    if (reads_chunk_sums) {
      const int pb = ds.need("partial");
      const Tensor& x = written.at("x");
      const bool backward = ds.fn == Fn::batchnorm_backward;
      std::vector<double> xv(size_t(x.numel())), dyv;
      for (int64_t e = 0; e < x.numel(); ++e)
        xv[size_t(e)] = x.get(e);
      if (backward) { // dy as a fused relu's backward masks it (relu_y), as the step reads it
        const Tensor& dy = written.at("dy");
        const Tensor* relu_y = written.count("relu_y") ? &written.at("relu_y") : nullptr;
        dyv.resize(xv.size());
        for (int64_t e = 0; e < dy.numel(); ++e)
          dyv[size_t(e)] = relu_y && relu_y->get(e) <= 0 ? 0.0 : dy.get(e);
      }
      const Buffer& b = dev_plan.buffers[pb];
      Tensor t(DType::f32, b.shape);
      std::vector<double> sums(size_t(t.numel()));
      const int64_t N = x.shape()[0], C = x.shape()[1];
      bn_chunk_sums(xv.data(), backward ? dyv.data() : nullptr, N, C, x.numel() / (N * C),
                    b.shape[0], sums.data());
      for (int64_t e = 0; e < t.numel(); ++e)
        t.set(e, sums[size_t(e)]);
      dev.write(pb, to_memory_order(t, b.layout));
      ref.write(pb, t.to(ref_plan.buffers[pb].dtype));
    }
    dev.run("forward");
    ref.run("forward");
    double num = 0, den = 0;
    bool nan = false;
    auto compare = [&](const Tensor& dv, const Tensor& rv) {
      for (int64_t e = 0; e < dv.numel(); ++e) {
        const double x = dv.get(e), y = rv.get(e);
        if (std::isnan(x) || std::isnan(y)) nan = true;
        row.max_abs = std::max(row.max_abs, std::abs(x - y));
        num += (x - y) * (x - y);
        den += y * y;
      }
    };
    for (const Arg& a : ds.args) {
      const Buffer& b = dev_plan.buffers[a.buffer];
      if (b.role != BufferRole::output && !(b.role == BufferRole::param && ds.fn == Fn::sgd_update))
        continue;
      if (out_form && is_form_role(a.role, *out_form)) continue; // below
      if (a.role == "partial" && ds.arg("tickets") >= 0) continue; // an in-kernel split's workspace
      const Tensor out = dev.read(a.buffer);
      if (picked.empty() || !per_image_role(ds.fn, a.role)) {
        compare(to_logical_order(out, b.layout), ref.read(a.buffer));
        continue;
      }
      // Every image written (no poison left), the picked ones against the reference.
      for (int64_t e = 0; e < out.numel() && !nan; ++e)
        nan = std::isnan(out.get(e));
      compare(to_logical_order(images_of(out, picked), b.layout), ref.read(a.buffer));
    }
    if (writes_form) {
      // The form as the tensor it stands for, and the total, which may differ from the
      // reference's only by values the reference's f64 puts on the other side of zero.
      const Shape& xs = dev_plan.buffers[out_form == &kFormOfY ? ds.need("y") : ds.need("x")].shape;
      try {
        const int v = ds.need(out_form->values), i = ds.need(out_form->index),
                  c = ds.need(out_form->count);
        const Tensor dv = decompacted(dev.read(v), dev.read(i), dev.read(c), xs);
        compare(dv, decompacted(ref.read(v), ref.read(i), ref.read(c), xs));
      } catch (const Error& e) {
        row.error = cat("the compacted form is corrupt: ", e.what());
      }
      if (ds.arg(out_form->nnz) >= 0 && row.error.empty()) {
        const int nb = ds.need(out_form->nnz);
        const int64_t dn = int64_t(dev.read(nb).get(0)), rn = int64_t(ref.read(nb).get(0));
        if (std::abs(dn - rn) > 1 + int64_t(1e-4 * double(numel(xs))))
          row.error =
              cat("nnz ", dn - nnz_before, " nonzeros counted, the reference ", rn - nnz_before);
      }
    }
    if (const int tb = ds.arg("tickets"); tb >= 0) { // the next launch starts from zeros
      const Tensor tk = dev.read(tb);
      for (int64_t e = 0; e < tk.numel() && row.error.empty(); ++e)
        if (tk.get(e) != 0) row.error = cat("tile counter ", e, " left at ", tk.get(e), ", not 0");
    }
    row.rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (nan) row.error = "NaN in the output (an element not written, or a NaN computed)";
    row.pass = row.error.empty() && !nan && row.rel <= row.tolerance;
  } catch (const Error& e) {
    row.error = e.what();
  }
  return row;
}

std::vector<KernelCheck>
check_kernels(const std::string& dir, const BackendFactory& device, uint64_t seed,
              bool alternatives, const CheckOptions& o,
              const std::function<void(size_t, size_t, const std::string&)>& progress) {
  const Plan plan = load_plan(dir + "/plan.json");
  const auto bytes = io::read_file(dir + "/manifest.json");
  const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const nlohmann::json man = json_util::parse(text, dir + "/manifest.json");
  namespace ju = json_util;
  const nlohmann::json& ks = ju::require(man, "kernels", "");
  ju::expect_array(ks, "/kernels");
  std::vector<KernelCheck> rows;
  for (size_t i = 0; i < ks.size(); ++i) {
    const std::string ptr = ju::child("/kernels", i);
    const std::string name = ju::get_string(ju::require(ks[i], "name", ptr), ptr + "/name");
    const bool chosen = !ks[i].contains("chosen") || ks[i]["chosen"].get<bool>();
    if (!chosen && !alternatives) continue;
    const std::string math = ks[i].contains("math") ? ks[i]["math"].get<std::string>() : "fp32";
    // The kernel as the plan has it, or (an alternative) from the manifest.
    Kernel k;
    const Step* step = nullptr;
    for (size_t kk = 0; kk < plan.kernels.size(); ++kk)
      if (plan.kernels[kk].name == name) k = plan.kernels[kk];
    if (k.name.empty()) {
      k.name = k.entry = name;
      k.image = "kernels/" + name + ".cubin";
      for (int d = 0; d < 3; ++d) {
        k.grid[d] = ks[i]["grid"][d].get<int64_t>();
        k.block[d] = ks[i]["block"][d].get<int64_t>();
      }
      if (ks[i].contains("cluster"))
        for (int d = 0; d < 3; ++d)
          k.cluster[d] = ks[i]["cluster"][d].get<int64_t>();
      k.dynamic_smem = ks[i]["dynamic_smem"].get<int64_t>();
      k.args = ks[i]["args"].get<std::vector<std::string>>();
    }
    const std::string node = ks[i]["nodes"].size() ? ks[i]["nodes"][0].get<std::string>() : "";
    // The step that launches it; an alternative, by its node (a tiled node has one step per
    // tile, each with its own kernel, so the node alone would name the wrong tile's step).
    for (const Phase& ph : plan.phases)
      for (const Step& s : ph.steps)
        if (!step && s.kind == StepKind::launch && s.kernel >= 0 &&
            plan.kernels[size_t(s.kernel)].name == name)
          step = &s;
    for (const Phase& ph : plan.phases)
      for (const Step& s : ph.steps)
        if (!step && s.kind != StepKind::free &&
            (s.node + " (" + std::string(fn_name(s.fn)) + ")") == node)
          step = &s;
    if (progress) progress(i, ks.size(), name);
    if (!step) {
      KernelCheck row;
      row.kernel = name;
      row.node = node;
      row.error = "no step of the plan uses it";
      rows.push_back(row);
      continue;
    }
    KernelCheck row = check_step(plan, *step, k, math, device, seed + i, o);
    row.node = node;
    rows.push_back(row);
  }
  return rows;
}

} // namespace kiln
