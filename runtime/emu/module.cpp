#include "runtime/emu/module.hpp"

#include "runtime/error.hpp"

#include <dlfcn.h>
#include <utility>
#include <vector>

namespace kiln {

namespace {
std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}
} // namespace

EmuModule::EmuModule(std::string path) : path_(std::move(path)) {
  // RTLD_LOCAL: each library keeps its own emulator state and kernel symbols.
  handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw Error(path_, "", "cannot load emulated kernels: " + dl_error());
  auto version = reinterpret_cast<KilnEmuAbiVersionFn>(dlsym(handle_, "kiln_emu_abi_version"));
  launch_ = reinterpret_cast<KilnEmuLaunchFn>(dlsym(handle_, "kiln_emu_launch"));
  if (!version || !launch_) {
    close();
    throw Error(path_, "", "not an emulated kernel library (no kiln_emu_launch)");
  }
  if (const unsigned v = version(); v != KILN_EMU_ABI_VERSION) {
    close();
    throw Error(path_, "",
                cat("emulator ABI version ", v, ", this runtime speaks ", KILN_EMU_ABI_VERSION,
                    ": rebuild the kernels"));
  }
}

EmuModule::~EmuModule() { close(); }

EmuModule::EmuModule(EmuModule&& o) noexcept
    : path_(std::move(o.path_)), handle_(std::exchange(o.handle_, nullptr)),
      launch_(std::exchange(o.launch_, nullptr)) {}

EmuModule& EmuModule::operator=(EmuModule&& o) noexcept {
  if (this != &o) {
    close();
    path_ = std::move(o.path_);
    handle_ = std::exchange(o.handle_, nullptr);
    launch_ = std::exchange(o.launch_, nullptr);
  }
  return *this;
}

void EmuModule::close() {
  if (handle_) dlclose(handle_);
  handle_ = nullptr;
  launch_ = nullptr;
}

bool EmuModule::has_kernel(const std::string& name) const {
  return handle_ && dlsym(handle_, name.c_str()) != nullptr;
}

KilnEmuEntry EmuModule::kernel(const std::string& name) const {
  void* sym = handle_ ? dlsym(handle_, name.c_str()) : nullptr;
  if (!sym) throw Error(path_, name, "no such kernel in the emulated library");
  return reinterpret_cast<KilnEmuEntry>(sym);
}

void EmuModule::launch(const std::string& name, const EmuLaunchConfig& config,
                       std::span<const EmuBuffer> args) const {
  if (args.size() > KILN_EMU_MAX_ARGS)
    throw Error(path_, name,
                cat(args.size(), " arguments; kernels take at most ", KILN_EMU_MAX_ARGS));
  KilnEmuLaunch l{};
  l.entry = kernel(name);
  for (int i = 0; i < 3; ++i) {
    l.grid[i] = config.grid[i];
    l.block[i] = config.block[i];
    l.cluster[i] = config.cluster[i];
  }
  l.dynamic_smem = config.dynamic_smem;
  for (std::size_t i = 0; i < args.size(); ++i) {
    l.args[i] = args[i].data;
    l.arg_bytes[i] = args[i].bytes;
    l.arg_names[i] = args[i].name;
  }
  l.checks = config.checks;
  l.workers = config.workers;
  l.kernel_name = name.c_str();
  std::vector<char> report(4096);
  if (launch_(&l, report.data(), report.size()) != KILN_EMU_OK)
    throw Error(path_, name, report.data());
}

} // namespace kiln
