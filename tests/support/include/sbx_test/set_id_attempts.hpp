// The set-user-ID escape replayed through the installed sbx: a command in the workspace tries
// every ordinary way of making a set-user-ID/set-group-ID file (chmod 4755, chmod u+s/g+s,
// install -m 4755, Python's os.open(..., O_CREAT, 0o4755), mknod of a set-ID regular file);
// afterwards the host checks that no file under the workspace carries either bit. Shared by
// the bwrap and the landlock suites.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

namespace sbx::test {

// Each attempt prints "<name>=<exit status>"; `chmod +x` of a build output must keep working.
inline std::string set_id_script(const std::string& workspace) {
  const std::string w = "'" + workspace + "'";
  const std::string py = "/usr/bin/python3 -c ";
  return "cp /usr/bin/id " + w + "/x; chmod 4755 " + w + "/x; echo chmod4755=$?; " + "chmod u+s " +
         w + "/x; echo chmod_us=$?; chmod g+s " + w + "/x; echo chmod_gs=$?; " +
         "install -m 4755 /usr/bin/id " + w + "/y; echo install4755=$?; " + py +
         "'import os,sys; os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o4755)' " + w +
         "/z; echo py_open=$?; " + py +
         "'import os,stat,sys; os.mknod(sys.argv[1], stat.S_IFREG | 0o2755)' " + w +
         "/n; echo py_mknod=$?; " + "cp /usr/bin/id " + w + "/build-output; chmod +x " + w +
         "/build-output; echo chmod_x=$?";
}

inline const std::vector<std::string>& set_id_attempts() {
  static const std::vector<std::string> names = {"chmod4755",   "chmod_us", "chmod_gs",
                                                 "install4755", "py_open",  "py_mknod"};
  return names;
}

// Files under `dir` (recursively) that carry S_ISUID or S_ISGID.
inline std::vector<std::string> set_id_files(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)) != 0)
      found.push_back(e.path().string());
  }
  return found;
}

}  // namespace sbx::test
