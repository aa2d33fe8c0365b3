#include "generator/rewrite/channel_views.hpp"

#include "generator/rewrite/channel_window.hpp"

#include "runtime/error.hpp"
#include "runtime/ops/registry.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace kiln {

namespace {

using ojson = nlohmann::ordered_json;

struct At {
  size_t phase, step;
  int global; // execution order across phases
};

// Who touches each buffer, from the plan as it was before the pass (the steps it removes
// are only marked, so these indices stay valid).
struct Uses {
  std::vector<At> order;                                 // global -> (phase, step)
  std::vector<std::vector<int>> writers, readers, frees; // per buffer: global step indices
  std::vector<std::vector<int>> views; // per base: its views (kept current by the pass)
};

Uses uses_of(const Plan& p) {
  Uses u;
  const size_t nb = p.buffers.size();
  u.writers.resize(nb), u.readers.resize(nb), u.frees.resize(nb), u.views.resize(nb);
  for (size_t b = 0; b < nb; ++b)
    if (p.buffers[b].view_of >= 0) u.views[size_t(p.buffers[b].view_of)].push_back(int(b));
  int g = 0;
  for (size_t ph = 0; ph < p.phases.size(); ++ph)
    for (size_t i = 0; i < p.phases[ph].steps.size(); ++i, ++g) {
      u.order.push_back({ph, i, g});
      const Step& s = p.phases[ph].steps[i];
      if (s.kind == StepKind::free) {
        if (s.buffer >= 0) u.frees[size_t(s.buffer)].push_back(g);
        continue;
      }
      for (const Arg& a : s.args) {
        const bool w = fn_writes(s.fn, a.role);
        if (w) u.writers[size_t(a.buffer)].push_back(g);
        if (!w || s.accumulate || fn_reads(s.fn, a.role) || fn_updates(s.fn, a.role))
          u.readers[size_t(a.buffer)].push_back(g);
      }
    }
  return u;
}

class ChannelViewPass {
public:
  ChannelViewPass(Plan& p, const ServesPitched& serves_pitched)
      : p_(p), u_(uses_of(p)), removed_(u_.order.size(), 0), serves_pitched_(serves_pitched) {}

  ChannelViews run() {
    for (const At& a : u_.order) {
      const Step& s = step(a.global);
      if (s.kind == StepKind::free) continue;
      if (s.fn == Fn::channel_slice_forward) slice(a.global, "x", "y", s.attrs.begin);
      // A concat's gradient: input k's is dy's channels at k's offset.
      if (s.fn == Fn::concat_backward) slice(a.global, "dy", "dx", s.channel_slice().offset);
    }
    for (const At& a : u_.order) {
      const Step& s = step(a.global);
      if (s.kind != StepKind::free && s.fn == Fn::concat_forward)
        concats_[s.need("y")].push_back(a.global);
    }
    // A concat whose inputs are the first inputs of a larger one (DenseNet: each layer
    // concatenates every feature map before it, the block's last concat all of them) is nested
    // in the largest: its root. Roots first, so that a nested concat whose inputs all became
    // views of its root is itself a view of the root's first channels.
    for (const auto& [y, steps] : concats_)
      inputs_[y] = ordered_inputs(steps);
    for (const auto& [y, steps] : concats_)
      root_[y] = root_of(y);
    for (const auto& [y, steps] : concats_)
      if (root_[y] == y) concat(y, steps);
    for (const auto& [y, steps] : concats_)
      if (root_[y] != y) nested(y, steps);
    rebuild();
    return out_;
  }

private:
  Step& step(int g) { return p_.phases[u_.order[size_t(g)].phase].steps[u_.order[size_t(g)].step]; }
  const Step& step(int g) const {
    return p_.phases[u_.order[size_t(g)].phase].steps[u_.order[size_t(g)].step];
  }
  const Buffer& buf(int b) const { return p_.buffers[size_t(b)]; }

  void decide(const Step& s, int b, const std::string& reason) {
    out_.decisions.push_back({s.node, buf(b).name, reason.empty(), reason});
    ++(reason.empty() ? out_.views : out_.copies);
  }

  // A concat's inputs in channel order (its steps each fill a range of channels).
  std::vector<int> ordered_inputs(std::vector<int> steps) const {
    std::sort(steps.begin(), steps.end(), [&](int a, int b) {
      return step(a).channel_slice().offset < step(b).channel_slice().offset;
    });
    std::vector<int> xs;
    for (int g : steps)
      for (int x : step(g).variadic('x'))
        xs.push_back(x);
    return xs;
  }

  int root_of(int y) const {
    const std::vector<int>& mine = inputs_.at(y);
    int root = y;
    for (const auto& [z, theirs] : inputs_)
      if (theirs.size() > mine.size() && std::equal(mine.begin(), mine.end(), theirs.begin()) &&
          theirs.size() > inputs_.at(root).size())
        root = z;
    return root;
  }

  void make_view(int b, int base, int64_t at, int64_t pitch = 0) {
    p_.buffers[size_t(b)].view_of = base;
    p_.buffers[size_t(b)].view_offset = at;
    p_.buffers[size_t(b)].view_pitch = pitch;
    u_.views[size_t(base)].push_back(b); // later decisions see it: no view of a view
  }

  // What every buffer that becomes a view, and its base, must be: a transient of its own
  // (not an input, output or parameter; no view and no base of a view), never freed before
  // the plan is finished, never named by a tiled segment's region copies.
  std::string own_transient(int b, const char* what) const {
    const Buffer& x = buf(b);
    if (x.role != BufferRole::activation)
      return cat(what, " is not a transient (role ", role_name(x.role), ")");
    if (x.view_of >= 0) return cat(what, " is itself a view");
    if (!u_.frees[size_t(b)].empty()) return cat(what, " is freed by the schedule");
    for (int g : u_.readers[size_t(b)])
      if (step(g).fn == Fn::region_copy) return cat(what, " is read by a tiled segment's region");
    for (int g : u_.writers[size_t(b)])
      if (step(g).fn == Fn::region_copy)
        return cat(what, " is written by a tiled segment's region");
    return "";
  }

  std::string aligned(const Buffer& base, int64_t elements) const {
    const int64_t bytes = elements * int64_t(dtype_size(base.dtype));
    if (bytes % kChannelViewAlignment)
      return cat("its offset of ", bytes, " bytes is not ", kChannelViewAlignment, "-byte aligned");
    return "";
  }

  // y = channels [begin, begin + y's) of x (roles xr, yr): y becomes a view of x.
  void slice(int g, const char* xr, const char* yr, int64_t begin) {
    const Step& s = step(g);
    const int x = s.need(xr), y = s.need(yr);
    const int64_t channels = buf(x).shape.size() > 1 ? buf(x).shape[1] : 0;
    const int64_t end = begin + (buf(y).shape.size() > 1 ? buf(y).shape[1] : 0);
    std::string why = own_transient(y, "the slice");
    if (why.empty()) why = own_transient(x, "its input");
    if (why.empty() && !u_.views[size_t(y)].empty()) why = "the slice is viewed by another buffer";
    if (why.empty() && (u_.writers[size_t(y)].size() != 1 || s.accumulate))
      why = "the slice is written by another step too (recomputed or accumulated)";
    if (why.empty() && buf(x).layout != buf(y).layout) why = "its input has another layout";
    // A strided window (a batch in NCHW, NHWC with H*W > 1): a pitched view where its pitch
    // is 16-byte aligned and kernels serve every reader through it (the cpu reference: any).
    const bool whole = begin == 0 && end == channels;
    const Window win = whole ? Window{0, 0} : window_of(buf(x), begin);
    const int64_t at = win.offset;
    if (why.empty() && buf(x).shape.size() < 2) why = "has no channel axis";
    if (why.empty()) why = aligned(buf(x), at);
    if (why.empty() && win.pitch > 0) why = pitch_aligned(buf(x), win);
    if (why.empty() && win.pitch > 0)
      if (const int r = unserved(y, x, win, u_.readers[size_t(y)]); r >= 0)
        why = cat(not_contiguous(buf(x), false), ", and no kernel for its reader ",
                  fn_name(step(r).fn), " reads through a pitch");
    // The view reads x's bytes as long as y is read: nothing may write x after the slice.
    for (int v : u_.views[size_t(x)])
      if (why.empty() && !u_.writers[size_t(v)].empty()) why = "a view of its input is written";
    for (int w : u_.writers[size_t(x)])
      if (why.empty() && w > g) why = "its input is written again after the slice";
    decide(s, y, why);
    if (!why.empty()) return;
    make_view(y, x, at, win.pitch);
    u_.writers[size_t(y)].clear(); // its one writer, the slice, goes
    removed_[size_t(g)] = 1;
    ++out_.steps_removed;
  }

  // Why y, a concat's output, cannot be the base of its inputs.
  std::string concat_output(int y, const std::vector<int>& steps) const {
    if (std::string why = own_transient(y, "the concat's output"); !why.empty()) return why;
    for (int v : u_.views[size_t(y)])
      if (!u_.writers[size_t(v)].empty()) return "a view of the concat's output is written";
    std::set<int64_t> offsets;
    int64_t channels = 0;
    for (int g : steps) {
      const Step& s = step(g);
      if (s.accumulate) return "the concat accumulates";
      if (u_.order[size_t(g)].phase != u_.order[size_t(steps[0])].phase)
        return "the concat's steps lie in two phases";
      if (!offsets.insert(s.channel_slice().offset).second)
        return "the concat is written twice (recomputed)";
      for (int x : s.variadic('x'))
        channels += buf(x).shape[1];
    }
    if (u_.writers[size_t(y)].size() != steps.size())
      return "the concat's output is written by other steps too";
    if (channels != buf(y).shape[1]) return "the concat's steps do not cover its output once";
    return not_contiguous(buf(y), true); // strided windows: pitched views (concat_input)
  }

  // Why x, written by its producer before the concat at global step g, cannot be a view of
  // the concat's output y at channel `first`.
  std::string concat_input(int x, int y, int g, int64_t first, const std::map<int, int>& times) {
    if (std::string why = own_transient(x, "the input"); !why.empty()) return why;
    if (times.at(x) > 1) return "the input appears twice in the concat";
    for (int r : u_.readers[size_t(x)])
      if (step(r).fn == Fn::concat_forward && step(r).need("y") != y &&
          root_.at(step(r).need("y")) != y)
        return "the input is read by another concat too";
    if (buf(x).layout != buf(y).layout) return "the input has another layout";
    const Window win = window_of(buf(y), first);
    const bool strided = win.pitch > 0;
    if (strided) {
      // Its other readers (pitched_steps below) but concats: y's, or those nested in y, which
      // all become pitched views of it where nested_ok_ says so.
      for (int r : u_.readers[size_t(x)])
        if (step(r).fn == Fn::concat_forward && step(r).need("y") != y &&
            !(nested_ok_ && root_.at(step(r).need("y")) == y))
          return cat(not_contiguous(buf(y), false),
                     ", and the input is read by a concat nested in it that copies");
      if (!u_.views[size_t(x)].empty()) return "the input is viewed by another buffer";
      if (std::string why = pitch_aligned(buf(y), win); !why.empty()) return why;
    }
    if (!u_.views[size_t(x)].empty()) {
      // A concat whose inputs all became views of it and whose steps went (Inception's
      // concat of a branch pair inside its block's): it moves into y whole, with its views.
      if (!gone_.count(x)) return "the input is viewed by another buffer";
      return aligned(buf(y), first * inner_of(buf(y).shape));
    }
    if (u_.writers[size_t(x)].size() != 1)
      return cat("the input is written by ", u_.writers[size_t(x)].size(),
                 " steps (recomputed or accumulated)");
    const int w = u_.writers[size_t(x)][0];
    const Step& producer = step(w);
    if (w > g || u_.order[size_t(w)].phase != u_.order[size_t(g)].phase)
      return "its producer does not run before the concat in its phase";
    if (producer.accumulate) return "its producer accumulates into it";
    if (fn_def(producer.fn).writes_part) return "its producer writes it in part";
    if (strided) {
      // In place: it reads y, or a window of y over x's channels (another input's, already a
      // view, lies apart).
      const int64_t lo_c = first, hi_c = first + buf(x).shape[1];
      for (const Arg& a : producer.args) {
        if (a.buffer == x || p_.base(a.buffer) != y) continue;
        const Buffer& v = buf(a.buffer);
        const int64_t c0 = a.buffer == y ? 0 : channel_of(buf(y), v.view_offset);
        const int64_t c1 = a.buffer == y ? buf(y).shape[1] : c0 + v.shape[1];
        if (c0 < hi_c && lo_c < c1) return "its producer reads the concat's output (in place)";
      }
      if (std::string why = aligned(buf(y), win.offset); !why.empty()) return why;
      return pitched_steps(x, y, win, w);
    }
    // x's elements in y once a view.
    const int64_t lo = first * inner_of(buf(y).shape), hi = lo + numel(buf(x).shape);
    for (const Arg& a : producer.args) {
      if (a.buffer == x && fn_updates(producer.fn, a.role)) return "its producer updates it";
      // In place: the producer would read what it writes (a residual or any input aliasing
      // those elements of the concat's output; another input's, already a view, is apart).
      if (fn_writes(producer.fn, a.role) || (a.buffer != x && p_.base(a.buffer) != y)) continue;
      const int64_t at = buf(a.buffer).view_offset, end = at + numel(buf(a.buffer).shape);
      if (a.buffer == x || a.buffer == y || (at < hi && lo < end))
        return "its producer reads the concat's output (in place)";
    }
    return aligned(buf(y), lo);
  }

  // Why a pitched window `win` of b cannot be viewed: its pitch is no multiple of the
  // alignment ("" where it is).
  static std::string pitch_aligned(const Buffer& b, Window win) {
    const int64_t bytes = win.pitch * int64_t(dtype_size(b.dtype));
    if (bytes % kChannelViewAlignment == 0) return "";
    return cat(not_contiguous(b, false), ", and its pitch of ", bytes, " bytes is not ",
               kChannelViewAlignment, "-byte aligned");
  }

  // The first of `steps` (global indices) no kernel serves with buffer v the pitched window
  // `win` of `base`, or -1: asked with the view made, undone either way (the caller makes it
  // for good). Without serves_pitched_ (the cpu reference) every step is served.
  int unserved(int v, int base, Window win, const std::vector<int>& steps) {
    if (!serves_pitched_) return -1;
    Buffer& b = p_.buffers[size_t(v)];
    const Buffer saved = b;
    b.view_of = base, b.view_offset = win.offset, b.view_pitch = win.pitch;
    int first = -1;
    for (int g : steps)
      if (!serves_pitched_(p_, step(g))) {
        first = g;
        break;
      }
    b = saved;
    return first;
  }

  // Whether x's producer (global step w) and its readers but concats can be served with x
  // the pitched window `win` of y.
  std::string pitched_steps(int x, int y, Window win, int w) {
    if (unserved(x, y, win, {w}) >= 0)
      return cat(not_contiguous(buf(y), false), ", and no kernel for its producer ",
                 fn_name(step(w).fn), " writes through a pitch");
    std::vector<int> readers;
    for (int r : u_.readers[size_t(x)])
      if (step(r).fn != Fn::concat_forward) readers.push_back(r);
    if (const int r = unserved(x, y, win, readers); r >= 0)
      return cat(not_contiguous(buf(y), false), ", and no kernel for its reader ",
                 fn_name(step(r).fn), " reads through a pitch");
    return "";
  }

  // Whether every concat nested in the strided root y can be a pitched view of its first
  // channels: its output a transient nothing else views, each of its readers served through
  // the pitch (DenseNet's batchnorms).
  bool nested_feasible(int y) {
    for (const auto& [z, steps] : concats_) {
      if (z == y || root_.at(z) != y) continue;
      if (!concat_output(z, steps).empty() || !u_.views[size_t(z)].empty()) return false;
      std::vector<int> readers;
      for (int r : u_.readers[size_t(z)])
        if (step(r).fn != Fn::concat_forward || step(r).need("y") != z) readers.push_back(r);
      if (unserved(z, y, window_of(buf(y), 0), readers) >= 0) return false;
    }
    return true;
  }

  void concat(int y, const std::vector<int>& steps) {
    const std::string whole = concat_output(y, steps);
    bool gone = whole.empty();
    std::map<int, int> times;
    for (int g : steps)
      for (int x : step(g).variadic('x'))
        ++times[x];
    // A strided root with nested concats: its inputs those read may be pitched views only if
    // every nested concat becomes one too, which needs each of their inputs to (a dry run).
    nested_ok_ = false;
    const bool nests = std::any_of(concats_.begin(), concats_.end(), [&](const auto& c) {
      return c.first != y && root_.at(c.first) == y;
    });
    if (whole.empty() && window_of(buf(y), 0).pitch > 0 && nests && nested_feasible(y)) {
      nested_ok_ = true;
      for (int g : steps) {
        int64_t at = step(g).channel_slice().offset;
        for (int x : step(g).variadic('x')) {
          const bool read_nested =
              std::any_of(u_.readers[size_t(x)].begin(), u_.readers[size_t(x)].end(), [&](int r) {
                return step(r).fn == Fn::concat_forward && step(r).need("y") != y;
              });
          if (read_nested && !concat_input(x, y, g, at, times).empty()) nested_ok_ = false;
          at += buf(x).shape[1];
        }
      }
    }
    for (int g : steps) {
      Step& s = step(g);
      std::vector<std::pair<int, int64_t>> kept; // inputs that still copy, at their channel
      int64_t at = s.channel_slice().offset;
      for (int x : s.variadic('x')) {
        std::string why = whole.empty() ? concat_input(x, y, g, at, times) : whole;
        decide(s, x, why);
        if (why.empty()) {
          const Window win = window_of(buf(y), at);
          for (int v : std::exchange(u_.views[size_t(x)], {})) { // (a concat moving whole)
            p_.buffers[size_t(v)].view_of = y;
            p_.buffers[size_t(v)].view_offset += win.offset;
            u_.views[size_t(y)].push_back(v);
          }
          make_view(x, y, win.offset, win.pitch);
        } else {
          kept.push_back({x, at});
        }
        at += buf(x).shape[1];
      }
      gone &= kept.empty();
      if (kept.size() == s.variadic('x').size()) continue;
      // The inputs left, as steps of consecutive channels (a ChannelSlice each).
      std::vector<Step> parts;
      for (size_t k = 0; k < kept.size(); ++k) {
        if (k == 0 || kept[k].second != kept[k - 1].second + buf(kept[k - 1].first).shape[1]) {
          Step part = s;
          part.args = {{"y", y}};
          part.params = ChannelSlice{kept[k].second};
          parts.push_back(std::move(part));
        }
        Step& part = parts.back();
        part.args.insert(part.args.end() - 1,
                         Arg{"x" + std::to_string(part.args.size() - 1), kept[k].first});
      }
      if (parts.empty()) ++out_.steps_removed;
      removed_[size_t(g)] = 1;
      replaced_[g] = std::move(parts);
    }
    if (gone) gone_.insert(y);
  }

  // A concat nested in its root: a view of the root's first channels where each of its
  // inputs became a view of the root at its own channel; otherwise it copies.
  void nested(int y, const std::vector<int>& steps) {
    const int root = root_.at(y);
    std::string why = concat_output(y, steps);
    if (why.empty() && !u_.views[size_t(y)].empty())
      why = "the concat's output is viewed by another buffer";
    int64_t channel = 0;
    bool pitched_input = false;
    for (int x : inputs_.at(y)) {
      const Window win = window_of(buf(root), channel);
      pitched_input |= buf(x).view_pitch > 0;
      if (why.empty() && (buf(x).view_of != root || buf(x).view_offset != win.offset ||
                          buf(x).view_pitch != win.pitch))
        why = "an input is no view of the concat it is nested in";
      channel += buf(x).shape[1];
    }
    // (Its copy could not read a pitched input: concat() made those only where this holds.)
    if (!why.empty() && pitched_input)
      throw Error("", "channel views",
                  cat("the nested concat ", buf(y).name, " copies pitched inputs: ", why));
    if (!why.empty()) return concat(y, steps);
    decide(step(steps[0]), y, "");
    const Window win = window_of(buf(root), 0);
    make_view(y, root, win.offset, win.pitch);
    for (int g : steps)
      removed_[size_t(g)] = 1;
    out_.steps_removed += int(steps.size());
  }

  void rebuild() {
    for (size_t ph = 0, g = 0; ph < p_.phases.size(); ++ph) {
      std::vector<Step> steps;
      for (Step& s : p_.phases[ph].steps) {
        if (auto it = replaced_.find(int(g)); it != replaced_.end())
          steps.insert(steps.end(), it->second.begin(), it->second.end());
        else if (!removed_[g])
          steps.push_back(std::move(s));
        ++g;
      }
      p_.phases[ph].steps = std::move(steps);
    }
  }

  Plan& p_;
  Uses u_;
  std::vector<char> removed_;
  std::map<int, std::vector<Step>> replaced_;
  std::map<int, std::vector<int>> inputs_; // per concat output: its inputs in channel order
  std::map<int, int> root_;                // per concat output: the concat it is nested in
  std::map<int, std::vector<int>> concats_; // per concat output: its concat.forward steps
  bool nested_ok_ = false; // the strided root concat() decides: its nested concats are views
  std::set<int> gone_; // concat outputs whose inputs all became views of them, steps gone
  ChannelViews out_;
  ServesPitched serves_pitched_;
};

} // namespace

ChannelViews plan_channel_views(Plan& p, const ServesPitched& serves_pitched) {
  return ChannelViewPass(p, serves_pitched).run();
}

ojson channel_views_json(const ChannelViews& v) {
  ojson kept = ojson::array();
  for (const ChannelViewDecision& d : v.decisions)
    if (!d.view) kept.push_back({{"node", d.node}, {"buffer", d.buffer}, {"reason", d.reason}});
  return {
      {"views", v.views}, {"copies", v.copies}, {"steps_removed", v.steps_removed}, {"kept", kept}};
}

} // namespace kiln
