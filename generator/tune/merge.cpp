#include "generator/tune/merge.hpp"

#include "runtime/error.hpp"

namespace kiln {

MergeResult merge_tuning_dbs(const std::vector<std::pair<std::string, TuningDb>>& inputs) {
  if (inputs.empty()) throw Error("", "", "nothing to merge: name at least one database");
  MergeResult r;
  const auto& [first_file, first] = inputs.front();
  r.db.kiln_version = first.kiln_version;
  r.db.gpu_name = first.gpu_name;
  r.db.gpu_arch = first.gpu_arch;
  r.db.gpu_identity = first.gpu_identity;
  r.db.device = first.device;
  for (const auto& [file, db] : inputs) {
    const auto refuse = [&](const char* what, const std::string& mine, const std::string& theirs) {
      throw Error(file, "",
                  cat("cannot merge: its ", what, " is ", mine, " but ", first_file, "'s is ",
                      theirs,
                      " (only databases of one GPU identity, kiln "
                      "version and device merge)"));
    };
    if (db.gpu_identity != first.gpu_identity)
      refuse("GPU identity", db.gpu_identity, first.gpu_identity);
    if (db.kiln_version != first.kiln_version)
      refuse("kiln version", db.kiln_version, first.kiln_version);
    if (db.device != first.device) refuse("device", db.device, first.device);
    for (const Measurement& m : db.measurements)
      r.conflicts += r.db.add(m);
  }
  return r;
}

} // namespace kiln
