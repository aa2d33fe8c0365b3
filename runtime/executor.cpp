#include "runtime/executor.hpp"

#include "runtime/error.hpp"

namespace kiln {

Executor::Executor(const Plan& plan, Backend& backend, ExecutorOptions options)
    : plan_(plan), backend_(backend), options_(std::move(options)),
      live_flag_(plan.buffers.size(), 0) {
  backend_.prepare(plan_);
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const Buffer& b = plan_.buffers[i];
    if (b.view_of < 0 && is_persistent(b.role)) make_live(int(i), "plan");
  }
  live_ = peak_ = 0; // persistent bytes are not part of the transient figure
}

int Executor::lookup(std::string_view name) const {
  const int b = plan_.find_buffer(name);
  if (b < 0) throw Error("", "plan", cat("no buffer named \"", name, "\""));
  return b;
}

void Executor::make_live(int base, const std::string& where) {
  const Buffer& b = plan_.buffers[base];
  const int64_t lo = b.offset, hi = b.offset + b.bytes();
  if (hi > lo) {
    auto it = live_ranges_.upper_bound(lo);
    if (it != live_ranges_.end() && it->first < hi)
      throw Error("", where, cat("buffer \"", b.name, "\" overlaps the live buffer \"",
                                 plan_.buffers[it->second].name, "\" in the arena"));
    if (it != live_ranges_.begin()) {
      const Buffer& prev = plan_.buffers[std::prev(it)->second];
      if (prev.offset + prev.bytes() > lo)
        throw Error("", where, cat("buffer \"", b.name, "\" overlaps the live buffer \"", prev.name,
                                   "\" in the arena"));
    }
    live_ranges_[lo] = base;
  }
  live_flag_[base] = 1;
  live_ += b.bytes();
  peak_ = std::max(peak_, live_);
  if (options_.poison && !is_persistent(b.role)) backend_.poison(base);
}

void Executor::check_readable(int buffer, const std::string& where) const {
  if (!live_flag_[plan_.base(buffer)])
    throw Error("", where, cat("reads \"", plan_.buffers[buffer].name,
                               "\", which is not written yet or already freed"));
}

void Executor::write(int buffer, const Tensor& t) {
  const Buffer& b = plan_.buffers[buffer];
  if (t.shape() != b.shape)
    throw Error("", b.name, cat("expected shape ", shape_str(b.shape), ", got ", shape_str(t.shape())));
  if (!is_persistent(b.role))
    throw Error("", b.name, "is a transient buffer; only inputs, targets and parameters are written");
  const BufferRole role = plan_.buffers[plan_.base(buffer)].role;
  if (role == BufferRole::derived)
    throw Error("", b.name, "is computed from the parameters by the plan's prepare phase");
  if (role == BufferRole::param || role == BufferRole::state) prepared_ = false;
  backend_.upload(buffer, t.dtype() == b.dtype ? t : t.to(b.dtype));
}

void Executor::write(std::string_view buffer, const Tensor& t) { write(lookup(buffer), t); }

Tensor Executor::read(int buffer) {
  check_readable(buffer, "read");
  return backend_.download(buffer);
}

Tensor Executor::read(std::string_view buffer) { return read(lookup(buffer)); }

void Executor::run(std::string_view phase_name) {
  const Phase* phase = plan_.phase(phase_name);
  if (!phase) throw Error("", "plan", cat("has no ", phase_name, " phase"));
  if (phase_name != "prepare" && !prepared_ && plan_.phase("prepare")) run("prepare");
  backend_.begin_phase(*phase);
  for (size_t i = 0; i < phase->steps.size(); ++i) {
    const Step& s = phase->steps[i];
    if (options_.on_step) options_.on_step(*phase, i);
    const std::string where = cat(phase->name, " step ", i, " (", s.kind == StepKind::free ? "free" : fn_name(s.fn),
                                  s.node.empty() ? "" : " of " + s.node, ")");
    if (s.kind == StepKind::free) {
      const int base = s.buffer;
      if (!live_flag_[base])
        throw Error("", where, cat("frees \"", plan_.buffers[base].name, "\", which is not live"));
      live_flag_[base] = 0;
      live_ -= plan_.buffers[base].bytes();
      live_ranges_.erase(plan_.buffers[base].offset);
      continue;
    }
    // Inputs, accumulated outputs and updated ones (a running count) must hold values.
    for (const Arg& a : s.args)
      if (!fn_writes(s.fn, a.role) || s.accumulate || fn_updates(s.fn, a.role))
        check_readable(a.buffer, where);
    for (const Arg& a : s.args) {
      const int base = plan_.base(a.buffer);
      if (!live_flag_[base]) make_live(base, where);
    }
    try {
      backend_.run(s);
    } catch (const Error& e) {
      throw Error(e.file(), e.where().empty() ? where : where + ": " + e.where(), e.message());
    }
  }
  backend_.end_phase(*phase);
  backend_.synchronize();
  if (phase_name == "prepare") prepared_ = true;
  if (phase_name == "update") prepared_ = false; // the parameters changed
}

} // namespace kiln
