#include "generator/compile/templates.hpp"

#include "runtime/embedded.hpp"
#include "runtime/error.hpp"
#include "runtime/io/file.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <xxhash.h>

namespace kiln {

extern const EmbeddedFile template_files[];
extern const size_t template_files_count;

const TemplateHeaders& template_headers() {
  static const TemplateHeaders h = [] {
    TemplateHeaders t;
    for (size_t i = 0; i < template_files_count; ++i) {
      const EmbeddedFile& f = template_files[i];
      if (!f.path.starts_with("templates/")) continue; // runtime headers are for the host compiler
      t.names.push_back(f.path.data() + std::string_view("templates/").size());
      t.contents.push_back(f.data.data()); // embed.py NUL-terminates
    }
    return t;
  }();
  return h;
}

std::string write_template_tree(const std::string& dir) {
  namespace fs = std::filesystem;
  for (size_t i = 0; i < template_files_count; ++i) {
    const EmbeddedFile& f = template_files[i];
    std::string rel(f.path);
    if (rel.starts_with("templates/")) rel = rel.substr(10);
    const fs::path p = fs::path(dir) / rel;
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    std::ifstream in(p, std::ios::binary);
    std::stringstream cur;
    cur << in.rdbuf();
    if (in && cur.str() == f.data) continue;
    io::write_file_atomic(p.string(), std::string(f.data));
  }
  return dir;
}

std::string templates_hash() {
  static const std::string h = [] {
    XXH3_state_t* st = XXH3_createState();
    XXH3_64bits_reset(st);
    for (size_t i = 0; i < template_files_count; ++i) {
      XXH3_64bits_update(st, template_files[i].path.data(), template_files[i].path.size() + 1);
      XXH3_64bits_update(st, template_files[i].data.data(), template_files[i].data.size());
    }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits_digest(st)));
    XXH3_freeState(st);
    return std::string(hex);
  }();
  return h;
}

} // namespace kiln
