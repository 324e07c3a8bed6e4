// SourceMap (primjit/ir/source_map.h): positions of parsed statements, kept beside the module.
#include "primjit/ir/source_map.h"

#include <cstdint>

#include "ir/hash_mix.h"
#include "ir/text/source.h"

namespace primjit {

void SourceMap::reset(std::string file, std::string_view text) {
  file_ = std::move(file);
  text_ = std::string(text);
  kept_.clear();
  nodes_.clear();
  late_uses_.clear();
}

void SourceMap::add(const Ref<Object>& node, SourceLocation where) {
  if (!node.defined() || !where.known()) return;
  if (nodes_.emplace(node.get(), where).second) kept_.push_back(node);
}

void SourceMap::add_late_use(const Ref<Object>& entity, SourceLocation stmt, SourceLocation use) {
  if (!entity.defined() || !stmt.known() || !use.known()) return;
  if (late_uses_.emplace(UseKey{entity.get(), stmt.line, stmt.column}, use).second) {
    kept_.push_back(entity);
  }
}

SourceLocation SourceMap::find(const Object* node) const {
  auto it = nodes_.find(node);
  return it != nodes_.end() ? it->second : SourceLocation{};
}

SourceLocation SourceMap::find_late_use(const Object* entity, SourceLocation stmt) const {
  auto it = late_uses_.find(UseKey{entity, stmt.line, stmt.column});
  return it != late_uses_.end() ? it->second : SourceLocation{};
}

std::string SourceMap::diagnostic(SourceLocation where, const std::string& message) const {
  text_internal::Source source(text_, file_);
  return source.format(text_internal::Loc{where.line, where.column}, message);
}

size_t SourceMap::UseKeyHash::operator()(const UseKey& k) const {
  uint64_t h = hashing::mix64(reinterpret_cast<uintptr_t>(k.entity));
  h = hashing::combine(h, static_cast<uint64_t>(k.line));
  return static_cast<size_t>(hashing::combine(h, static_cast<uint64_t>(k.column)));
}

}  // namespace primjit
