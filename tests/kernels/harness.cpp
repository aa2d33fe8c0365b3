#include "tests/kernels/harness.hpp"

#include "generator/compile/cache.hpp"
#include "generator/compile/compile_dir.hpp"
#include "generator/compile/nvrtc.hpp"
#include "generator/emit/instance.hpp"
#include "generator/gpu/gpu_desc.hpp"
#include "generator/select/families/hopper/conv_wgmma.hpp"
#include "generator/select/families/hopper/tensor_map_binding.hpp"
#include "generator/select/select.hpp"
#include "runtime/emu/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/io/file.hpp"
#include "runtime/layout_order.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

namespace kiln::test {

namespace fs = std::filesystem;

namespace {

bool writes(Fn fn, const std::string& role) { return fn_writes(fn, role); }

InstanceOrigin origin_for(const Built& b) {
  InstanceOrigin o;
  o.model = "test";
  o.gpu = b.gpu;
  o.nodes = {b.spec.label};
  return o;
}

std::string arch_of(const std::string& gpu) { return load_gpu(gpu).arch; }

} // namespace

std::string temp_dir(const std::string& prefix) {
  std::string t = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(t.data())) throw Error("", "", "cannot create a temporary directory");
  static std::mutex m;
  static std::vector<std::string> dirs;
  std::lock_guard<std::mutex> lock(m);
  if (dirs.empty())
    std::atexit([] {
      for (const std::string& d : dirs) {
        std::error_code ec;
        fs::remove_all(d, ec);
      }
    });
  dirs.push_back(t);
  return t;
}

Plan spec_plan(const StepSpec& s) {
  Plan p;
  p.model = "test";
  p.kiln_version = KILN_VERSION;
  p.dtype = DType::f32;
  Step st;
  st.kind = StepKind::reference;
  st.fn = s.fn;
  st.node = s.label;
  st.op = s.op;
  st.attrs = s.attrs;
  st.accumulate = s.accumulate;
  st.epilogue = s.epilogue;
  st.sparse = s.sparse;
  st.params = std::holds_alternative<std::monostate>(s.params) ? default_params(s.fn) : s.params;
  int64_t offset = 0;
  for (const ArgSpec& a : s.args) {
    Buffer b;
    b.name = a.role;
    b.shape = a.shape;
    b.dtype = a.dtype;
    b.layout = a.layout;
    b.offset = offset;
    b.role = a.dtype == DType::i64 ? BufferRole::target
             : writes(s.fn, a.role)
                 ? (s.fn == Fn::sgd_update ? BufferRole::param : BufferRole::output)
                 : BufferRole::input;
    offset += (b.bytes() + 255) / 256 * 256;
    p.buffers.push_back(b);
    const int idx = int(p.buffers.size()) - 1;
    if (b.role == BufferRole::output) p.outputs.push_back(idx);
    if (b.role == BufferRole::input) p.inputs.push_back(idx);
    if (b.role == BufferRole::param) p.params.push_back({b.name, idx, -1, 0, 0});
    st.args.push_back({a.role, idx});
  }
  p.arena_bytes = offset;
  p.phases.push_back(Phase{"forward", {st}});
  validate_plan(p);
  return p;
}

std::vector<Built> all_variants(const std::vector<StepSpec>& specs,
                                const std::vector<std::string>& gpus,
                                std::vector<std::string>* unserved) {
  std::vector<Built> out;
  for (const std::string& gname : gpus) {
    const GpuDesc g = load_gpu(gname);
    for (const StepSpec& s : specs) {
      const Plan p = spec_plan(s);
      const StepInfo info{p, p.phases[0].steps[0], g};
      size_t before = out.size();
      for (const Family* f : all_families())
        for (Variant& v : step_candidates(*f, info)) {
          bool layouts_match = true; // the test feeds the spec's buffers as they are
          for (const auto& [role, layout] : v.layouts)
            if (info.has(role) && info.layout(role) != layout) layouts_match = false;
          if (invalid_reason(g, v).empty() && layouts_match) {
            price_variant(g, v); // the launch bounds generation gives it
            out.push_back({s, gname, std::move(v)});
          }
        }
      if (out.size() == before && unserved) unserved->push_back(s.label + " on " + gname);
    }
  }
  return out;
}

int arch_number(const std::string& arch) { return std::stoi(arch.substr(3)); } // "sm_86": 86

std::string compile_class(const std::string& kernel, const std::string& source,
                          const std::string& arch) {
  // The name's architecture suffix (_sm80, _sm90a), where it has one.
  std::string suffix;
  if (const size_t at = kernel.rfind("_sm"); at != std::string::npos) {
    const std::string tail = kernel.substr(at + 3);
    const size_t digits = tail.find_first_not_of("0123456789");
    if (digits > 0 && (digits == std::string::npos || tail.substr(digits) == "a"))
      suffix = kernel.substr(at);
  }
  // The source less its comment lines (which GPU, why chosen) and the suffix: what the
  // compiler sees, launch bounds included.
  std::string text;
  std::istringstream in(source);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("//")) continue;
    for (size_t at; !suffix.empty() && (at = line.find(suffix)) != std::string::npos;)
      line.erase(at, suffix.size());
    text += line + "\n";
  }
  const std::string cls = arch.ends_with('a') || arch_number(arch) < 80 ? arch : "sm_80+";
  return cls + "\n" + text;
}

std::vector<std::string> nvrtc_failures(const std::vector<Built>& built, int jobs) {
  std::map<std::string, const Built*> distinct; // compile_class -> its newest architecture's
  for (const Built& b : built) {
    const std::string arch = instance_arch(b.variant, arch_of(b.gpu));
    auto [at, fresh] = distinct.emplace(
        compile_class(b.variant.name, instance_source(b.variant, origin_for(b)), arch), &b);
    if (!fresh && arch_number(arch_of(b.gpu)) > arch_number(arch_of(at->second->gpu)))
      at->second = &b;
  }
  std::vector<const Built*> todo;
  for (auto& [k, b] : distinct)
    todo.push_back(b);
  std::vector<std::string> failures;
  std::mutex m;
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, jobs); ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < todo.size();) {
        const Built& b = *todo[i];
        const std::string arch = instance_arch(b.variant, arch_of(b.gpu));
        const std::string src = instance_source(b.variant, origin_for(b));
        const CompileOutput out = nvrtc_compile(src, b.variant.name + ".cu", b.variant.name, arch);
        std::lock_guard<std::mutex> lock(m);
        if (!out.ok)
          failures.push_back(b.variant.name + " for " + arch + ":\n" + out.log);
        else if (b.variant.promises_no_spills &&
                 (out.resources.spill_stores || out.resources.spill_loads))
          failures.push_back(b.variant.name + " for " + arch + " spills " +
                             std::to_string(out.resources.spill_stores) + " bytes");
        else if (!out.resources.found)
          failures.push_back(b.variant.name + " for " + arch + ": no ptxas report for its entry");
      }
    });
  for (std::thread& t : pool)
    t.join();
  return failures;
}

BackendFactory emu_library(const std::vector<Built>& built, const std::string& dir) {
  fs::create_directories(dir + "/kernels");
  nlohmann::ordered_json man;
  man["gpu"] = {{"arch", "sm_90"}, {"identity", "test"}};
  man["kernels"] = nlohmann::ordered_json::array();
  std::map<std::string, bool> seen;
  for (const Built& b : built) {
    if (seen[b.variant.name]) continue;
    seen[b.variant.name] = true;
    const std::string src = instance_source(b.variant, origin_for(b));
    const std::string rel = "kernels/" + b.variant.name + ".cu";
    io::write_file_atomic(dir + "/" + rel, src);
    man["kernels"].push_back({{"name", b.variant.name},
                              {"entry", b.variant.name},
                              {"source", rel},
                              {"source_hash", content_hash(src)}});
  }
  io::write_file_atomic(dir + "/manifest.json", man.dump(1));
  CompileOptions co;
  co.compiler = "host";
  compile_dir(dir, co);
  const std::string lib = emu_library_path(dir);
  return [lib] { return std::make_unique<EmuBackend>(lib, EmuOptions{KILN_EMU_CHECK_ALL, 0}); };
}

// The spec's plan and its one step, with the tensor maps a Hopper variant reads bound (their
// encode steps in a prepare phase), as kernel assignment binds them in a generated plan.
std::pair<Plan, Step> bound_step(const Built& b) {
  Plan p = spec_plan(b.spec);
  const Step s = p.phases[0].steps[0];
  Step bound = with_tensor_maps_of(p, s, b.variant);
  return {std::move(p), std::move(bound)};
}

KernelCheck emu_check(const Built& b, const BackendFactory& emu, uint64_t seed, double density) {
  const auto [p, s] = bound_step(b);
  KernelCheck r = check_step(p, s, kernel_of(b.variant), std::string(math_name(b.variant.math)),
                             emu, seed, CheckOptions{.density = density, .images = 0});
  r.node = b.spec.label + " on " + b.gpu;
  return r;
}

std::vector<KernelCheck> emu_checks(const std::vector<Built>& built, const std::string& dir,
                                    uint64_t seed, double density) {
  const BackendFactory factory = emu_library(built, dir);
  std::vector<KernelCheck> rows;
  for (const Built& b : built)
    rows.push_back(emu_check(b, factory, seed, density));
  return rows;
}

Tensor emu_run(const Built& b, const std::string& lib, const std::map<std::string, Tensor>& in,
               const std::string& out, unsigned workers) {
  const auto [one, step] = bound_step(b);
  const Kernel k = kernel_of(b.variant);
  const Plan dev = single_step_plan(one, step, &k, false);
  EmuBackend backend(lib, EmuOptions{KILN_EMU_CHECK_ALL, workers});
  Executor e(dev, backend);
  const Step& s = dev.phases.back().steps[0];
  for (const Arg& a : s.args)
    if (in.count(a.role)) e.write(a.buffer, in.at(a.role));
  e.run("forward");
  return e.read(s.need(out));
}

std::vector<unsigned char> bytes_of(const Tensor& t) {
  std::vector<unsigned char> out(t.nbytes());
  std::memcpy(out.data(), t.bytes(), out.size());
  return out;
}

std::map<std::string, Tensor> random_inputs(const Built& b, uint64_t seed) {
  const Plan one = spec_plan(b.spec);
  std::map<std::string, Tensor> in;
  for (const Arg& a : one.phases[0].steps[0].args) {
    const Buffer& buf = one.buffers[size_t(a.buffer)];
    if (fn_writes(b.spec.fn, a.role)) continue;
    Tensor t(buf.dtype, buf.shape); // integers (counters) zero
    for (int64_t e = 0; is_float(buf.dtype) && e < t.numel(); ++e) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      t.set(e, double(seed >> 40) / double(1 << 24) - 0.5);
    }
    in.emplace(a.role, to_memory_order(t, buf.layout));
  }
  return in;
}

} // namespace kiln::test
