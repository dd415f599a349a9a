#include "util.hpp"

namespace tug::opt {

std::map<std::string, join_origin> join_origins(const plan_node& j) {
  const schema& ls = j.inputs[0]->schema;
  const schema& rs = j.inputs[1]->schema;
  std::map<std::string, join_origin> out;
  bool coalescing = j.how == join_type::inner || j.how == join_type::left || j.how == join_type::right;
  auto is_key = [&](const std::vector<expr>& keys, const std::vector<expr>& other, const std::string& name) {
    if (!coalescing) return false;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i]->kind == expr_kind::column && other[i]->kind == expr_kind::column && keys[i]->name == name)
        return true;
    return false;
  };
  std::set<std::string> taken;
  auto add = [&](int side, const std::string& name, bool suffixed) {
    std::string o = suffixed && taken.count(name) ? name + j.suffix : name;
    taken.insert(o);
    out[o] = {side, name};
  };
  if (j.how == join_type::semi || j.how == join_type::anti) {
    for (auto& f : ls) add(0, f.name, false);
  } else if (j.how == join_type::right) {
    for (auto& f : ls)
      if (!is_key(j.keys, j.right_keys, f.name)) add(0, f.name, false);
    for (auto& f : rs) add(1, f.name, true);
  } else {
    for (auto& f : ls) add(0, f.name, false);
    for (auto& f : rs)
      if (!is_key(j.right_keys, j.keys, f.name)) add(1, f.name, true);
  }
  return out;
}

}  // namespace tug::opt
