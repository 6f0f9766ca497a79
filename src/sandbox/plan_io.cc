// A plan as JSON, for the worker zygote (supervisor/zygote.h): the supervisor makes a worker's plan as
// for a spawn, and the forked child of the zygote reads it back and applies it. The schema is this
// file's; a field missing or of another type is an error, never a default: a plan that is not read
// whole is not applied.
#include "sandbox/sandbox.h"

namespace kbv::sandbox {

using nlohmann::json;

namespace {

json binds_json(const std::vector<Bind>& binds) {
  json a = json::array();
  for (const Bind& b : binds) a.push_back({b.source, b.target, b.writable, b.directory});
  return a;
}

bool read_binds(const json& a, std::vector<Bind>& out) {
  if (!a.is_array()) return false;
  for (const auto& b : a) {
    if (!b.is_array() || b.size() != 4 || !b[0].is_string() || !b[1].is_string() || !b[2].is_boolean() ||
        !b[3].is_boolean())
      return false;
    out.push_back({b[0].get<std::string>(), b[1].get<std::string>(), b[2].get<bool>(), b[3].get<bool>()});
  }
  return true;
}

template <typename T>
bool read(const json& j, const char* key, T& out, std::string& error) {
  if (!j.contains(key)) {
    error = std::string("the sandbox plan has no \"") + key + "\"";
    return false;
  }
  try {
    out = j.at(key).get<T>();
  } catch (const json::exception& e) {
    error = std::string("the sandbox plan's \"") + key + "\": " + e.what();
    return false;
  }
  return true;
}

}  // namespace

json plan_to_json(const Plan& p) {
  json filter = json::array();
  for (const sock_filter& f : p.seccomp_filter) filter.push_back({f.code, f.jt, f.jf, f.k});
  std::vector<bool> want(p.want.begin(), p.want.end());
  return {{"mode", static_cast<int>(p.mode)},
          {"want", want},
          {"confine", p.confine},
          {"unshare_flags", p.unshare_flags},
          {"uid_map", p.uid_map},
          {"gid_map", p.gid_map},
          {"remount_readonly", p.remount_readonly},
          {"remount_flags", p.remount_flags},
          {"binds", binds_json(p.binds)},
          {"tmpfs_over", p.tmpfs_over},
          {"reveals", binds_json(p.reveals)},
          {"mount_proc", p.mount_proc},
          {"landlock_abi", p.landlock_abi},
          {"landlock_paths", p.landlock_paths},
          {"landlock_access", p.landlock_access},
          {"seccomp_filter", filter},
          {"rlimit_resource", p.rlimit_resource},
          {"rlimit_value", p.rlimit_value},
          {"uid", p.uid},
          {"gid", p.gid},
          {"drop_uid", p.drop_uid}};
}

bool plan_from_json(const json& j, Plan& p, std::string& error) {
  if (!j.is_object()) {
    error = "the sandbox plan is not an object";
    return false;
  }
  int mode = 0;
  std::vector<bool> want;
  std::vector<std::vector<uint64_t>> filter;
  if (!read(j, "mode", mode, error) || !read(j, "want", want, error) || !read(j, "confine", p.confine, error) ||
      !read(j, "unshare_flags", p.unshare_flags, error) || !read(j, "uid_map", p.uid_map, error) ||
      !read(j, "gid_map", p.gid_map, error) || !read(j, "remount_readonly", p.remount_readonly, error) ||
      !read(j, "remount_flags", p.remount_flags, error) || !read(j, "tmpfs_over", p.tmpfs_over, error) ||
      !read(j, "mount_proc", p.mount_proc, error) || !read(j, "landlock_abi", p.landlock_abi, error) ||
      !read(j, "landlock_paths", p.landlock_paths, error) || !read(j, "landlock_access", p.landlock_access, error) ||
      !read(j, "seccomp_filter", filter, error) || !read(j, "rlimit_resource", p.rlimit_resource, error) ||
      !read(j, "rlimit_value", p.rlimit_value, error) || !read(j, "uid", p.uid, error) ||
      !read(j, "gid", p.gid, error) || !read(j, "drop_uid", p.drop_uid, error))
    return false;
  if (mode < static_cast<int>(Mode::off) || mode > static_cast<int>(Mode::strict) || want.size() != p.want.size()) {
    error = "the sandbox plan's mode or layers are not this build's";
    return false;
  }
  p.mode = static_cast<Mode>(mode);
  for (size_t i = 0; i < want.size(); ++i) p.want[i] = want[i];
  if (!j.contains("binds") || !read_binds(j["binds"], p.binds) || !j.contains("reveals") ||
      !read_binds(j["reveals"], p.reveals)) {
    error = "the sandbox plan's binds are not [source, target, writable, directory] lists";
    return false;
  }
  for (const auto& f : filter) {
    if (f.size() != 4) {
      error = "the sandbox plan's seccomp filter is not [code, jt, jf, k] lists";
      return false;
    }
    p.seccomp_filter.push_back({static_cast<uint16_t>(f[0]), static_cast<uint8_t>(f[1]), static_cast<uint8_t>(f[2]),
                                static_cast<uint32_t>(f[3])});
  }
  return true;
}

}  // namespace kbv::sandbox
