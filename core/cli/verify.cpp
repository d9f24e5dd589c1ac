// The conformance kit behind `sbx backends --verify NAME` (verify.hpp; the definitions and
// attack lists: sdk/CAPABILITIES.md).
//
// Each attack is a real run of this very executable, `sbx --backends NAME exec --sandbox
// require --policy P --cwd W -- /bin/sh -c SCRIPT`, in a child process: the run takes exactly
// the path a user's command takes (option parsing, settings, resolution, the manager's
// capability match, call isolation of a third-party plugin, the backend's transform and exec),
// the evidence is a command line anyone can run again, and a backend that crashes or hangs
// fails one attack instead of the kit. `--sandbox require` means a backend that is not chosen
// refuses the run rather than running the attack unsandboxed. Everything an attack targets
// lies in a scratch directory the kit makes and removes: a lying backend writes there, never
// elsewhere. What reached the host is checked on the host after the run (files, modes,
// listeners the kit holds), not taken from the command's word.
#include "verify.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "sbx/core/runtime.hpp"
#include "sbx/sdk/posix_child.hpp"
#include "sbx/sdk/unique_fd.hpp"
#include "text_table.hpp"

// The kit's own names live in verify_kit: the CLI is compiled in unity batches, where every
// file's anonymous namespace shares one translation unit (core/cli/CMakeLists.txt).
namespace sbx::cli::verify_kit {
namespace {

namespace fs = std::filesystem;
using sbx::UniqueFd;

// Printed first by every attack script: without it the command never ran (sbx refused the run,
// or the backend failed), and nothing the run did not do counts as stopped. The script prints
// it with printf from two parts, so a message of sbx's quoting the command line never holds it,
// and only a whole line counts.
constexpr std::string_view kRanMarker = "sbx-verify-ran";
constexpr std::string_view kRanCommand = "printf 'sbx-verify-%s\\n' ran; ";

// True when `text` has `line` as a whole line.
bool has_line(const std::string& text, std::string_view line) {
  for (std::size_t at = text.find(line); at != std::string::npos; at = text.find(line, at + 1)) {
    const std::size_t end = at + line.size();
    if ((at == 0 || text[at - 1] == '\n') && (end == text.size() || text[end] == '\n')) return true;
  }
  return false;
}

// Per run; a sandboxed command is expected to take milliseconds.
constexpr int kRunTimeoutMs = 30000;

// ---- the host side: files, and listeners the kit holds ----

std::string quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-./=:,+@%") == std::string::npos)
    return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode : 0;
}

// A random token: what a secret file holds, so that its appearance in the output is evidence.
std::string token(std::mt19937_64& random) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "sbx-verify-secret-";
  for (int i = 0; i < 16; ++i) out += kDigits[random() % 16];
  return out;
}

// One stream or datagram listener on the host, outside every sandbox.
struct Listener {
  std::string what;  // e.g. "TCP 127.0.0.1:40123"
  std::string address;
  std::string port;
  UniqueFd fd;
  bool stream = true;

  bool ready() const { return fd.get() >= 0; }

  // True when something reached it since the last call (a queued connection, a datagram);
  // consumes what came.
  bool contacted() {
    if (!ready()) return false;
    bool seen = false;
    char buffer[256];
    for (;;) {
      const int got = stream
                          ? ::accept4(fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)
                          : static_cast<int>(::recv(fd.get(), buffer, sizeof buffer, MSG_DONTWAIT));
      if (got < 0) return seen;
      if (stream) ::close(got);
      seen = true;
    }
  }
};

Listener inet_listener(int family, int type) {
  Listener out;
  out.stream = type == SOCK_STREAM;
  UniqueFd fd(::socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return out;
  sockaddr_storage address{};
  socklen_t length = 0;
  if (family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    v4->sin_family = AF_INET;
    v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    length = sizeof *v4;
    out.address = "127.0.0.1";
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    v6->sin6_family = AF_INET6;
    v6->sin6_addr = in6addr_loopback;
    length = sizeof *v6;
    out.address = "::1";
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) return out;
  if (out.stream && ::listen(fd.get(), 16) != 0) return out;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) return out;
  const std::uint16_t port = family == AF_INET
                                 ? reinterpret_cast<sockaddr_in*>(&address)->sin_port
                                 : reinterpret_cast<sockaddr_in6*>(&address)->sin6_port;
  out.port = std::to_string(ntohs(port));
  out.what = std::string(out.stream ? "TCP" : "UDP") + " listener on " +
             (family == AF_INET6 ? "[::1]" : out.address) + ":" + out.port;
  out.fd = std::move(fd);
  return out;
}

// A unix stream listener at a pathname, or in the abstract namespace when `abstract`.
Listener unix_listener(const std::string& name, bool abstract) {
  Listener out;
  out.address = name;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (name.size() + 2 > sizeof address.sun_path) return out;
  std::memcpy(address.sun_path + (abstract ? 1 : 0), name.data(), name.size());
  const auto length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + (abstract ? 1 : 0));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return out;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), length) != 0) return out;
  if (::listen(fd.get(), 16) != 0) return out;
  out.what = std::string("unix listener at ") + (abstract ? "@" : "") + name;
  out.fd = std::move(fd);
  return out;
}

// ---- one attack ----

// What a run printed and how it ended.
struct Ran {
  bool ran = false;  // the script's first line came out: the command did run
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  std::string output;  // stdout and stderr interleaved
};

struct Verdict {
  AttackResult result = AttackResult::kFail;
  std::string host;  // what the kit saw on the host
};

struct Attack {
  std::string name;
  std::string expected;
  std::string script;  // the body after the marker, run by /bin/sh -c
  // Run outside any sandbox first, the helper's arguments: when the call fails there too, the
  // attack proves nothing here (inconclusive). Empty: no baseline.
  std::vector<std::string> baseline;
  std::function<Verdict(const Ran&)> judge;
};

struct CapabilityPlan {
  Capability capability;
  std::string policy;  // compact JSON
  std::vector<Attack> attacks;
};

Verdict holds(std::string host) { return {AttackResult::kPass, std::move(host)}; }
Verdict breaks(std::string host) { return {AttackResult::kFail, std::move(host)}; }

// The helper's word for the call it made: "done", "refused", "setup" or "" (no such line).
std::string helper_word(const std::string& output) {
  for (std::string_view word : {"done: ", "refused: ", "setup: "}) {
    const std::size_t at = output.find(word);
    if (at != std::string::npos && (at == 0 || output[at - 1] == '\n'))
      return std::string(word.substr(0, word.size() - 2));
  }
  return {};
}

std::string describe_run(const Ran& run) {
  std::string out = run.timed_out ? "killed after " + std::to_string(kRunTimeoutMs / 1000) + " s"
                    : run.signal != 0 ? "killed by signal " + std::to_string(run.signal)
                                      : "exit " + std::to_string(run.exit_code);
  std::string text = run.output;
  const std::string marker = std::string(kRanMarker) + "\n";
  if (text.rfind(marker, 0) == 0) {
    text.erase(0, marker.size());
  } else if (const std::size_t at = text.find("\n" + marker); at != std::string::npos) {
    text.erase(at + 1, marker.size());
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  constexpr std::size_t kKept = 600;
  if (text.size() > kKept) text = "..." + text.substr(text.size() - kKept);
  return out + (text.empty() ? "; no output" : "; output: " + printable(text));
}

class Kit {
 public:
  Kit(const LoadedPlugin& plugin, const GlobalOptions& globals, std::string sbx, std::string helper,
      std::string scratch)
      : plugin_(plugin),
        globals_(globals),
        sbx_(std::move(sbx)),
        helper_(std::move(helper)),
        scratch_(std::move(scratch)),
        random_(std::random_device{}()) {}

  VerifyCapability run(Capability capability);

 private:
  CapabilityPlan plan(Capability capability, const std::string& dir);
  CapabilityPlan write_restriction(const std::string& dir);
  CapabilityPlan read_restriction(const std::string& dir);
  CapabilityPlan write_carveouts(const std::string& dir);
  CapabilityPlan read_carveouts(const std::string& dir);
  CapabilityPlan protected_names(const std::string& dir);
  CapabilityPlan deny_globs(const std::string& dir);
  CapabilityPlan network_block(const std::string& dir);
  CapabilityPlan proxy_network(const std::string& dir);
  CapabilityPlan unix_socket_allowlist(const std::string& dir);
  CapabilityPlan syscall_filter(const std::string& dir);
  CapabilityPlan local_binding(const std::string& dir);
  CapabilityPlan unix_socket_block(const std::string& dir);

  // The attacks on the host's listeners shared by the network capabilities.
  void add_listener_attacks(const std::string& dir, CapabilityPlan& out, bool with_inet,
                            bool with_unix);
  Attack unreachable(const std::string& name, Listener& listener,
                     const std::vector<std::string>& helper_args);
  Attack helper_call(const std::string& name, const std::string& expected,
                     const std::vector<std::string>& args, bool with_baseline);
  Attack stays(const std::string& name, const std::string& expected, const std::string& script,
               std::function<std::string()> broken);

  std::vector<std::string> command(const std::string& policy_file, const std::string& cwd,
                                   const std::string& script) const;
  Ran execute(const std::vector<std::string>& argv, const std::string& cwd) const;
  std::vector<std::string> environment() const;
  std::string helper_script(const std::vector<std::string>& args) const;

  const LoadedPlugin& plugin_;
  const GlobalOptions& globals_;
  std::string sbx_;
  std::string helper_;
  std::string scratch_;
  std::mt19937_64 random_;
  std::deque<Listener> listeners_;  // open while one capability is attacked; stable addresses
};

std::vector<std::string> Kit::environment() const {
  // Only what a run needs, so that the caller's secrets stay out of the evidence. HOME and the
  // runtime and cache directories are the caller's (sbx keeps its state there, never in a
  // shared directory such as /tmp); XDG_CONFIG_HOME is the scratch directory's, so that no user
  // settings file changes the attacks' policies (the system's settings still apply).
  std::vector<std::string> env = {"XDG_CONFIG_HOME=" + scratch_ + "/config", "LANG=C"};
  const char* path = std::getenv("PATH");
  env.push_back(std::string("PATH=") + (path != nullptr ? path : "/usr/bin:/bin"));
  for (const char* name : {"HOME", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME"}) {
    if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
  }
  return env;
}

std::vector<std::string> Kit::command(const std::string& policy_file, const std::string& cwd,
                                      const std::string& script) const {
  std::vector<std::string> argv = {sbx_, "--backends", plugin_.name};
  for (const std::string& dir : globals_.plugin_dirs) {
    argv.push_back("--plugin-dir");
    argv.push_back(dir);
  }
  const std::vector<std::string> rest = {"exec",
                                         "--sandbox",
                                         "require",
                                         "--policy",
                                         policy_file,
                                         "--cwd",
                                         cwd,
                                         "--",
                                         "/bin/sh",
                                         "-c",
                                         std::string(kRanCommand) + script};
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

Ran Kit::execute(const std::vector<std::string>& argv, const std::string& cwd) const {
  sdk::posix_child::CaptureOptions options;
  options.env = environment();
  options.cwd = cwd;
  options.timeout_ms = kRunTimeoutMs;
  Ran out;
  Result<sdk::posix_child::Captured> captured = sdk::posix_child::run_capture(argv, options);
  if (!captured.ok()) {
    out.output = captured.failure().message;
    return out;
  }
  out.exit_code = captured->exit_code;
  out.signal = captured->signal;
  out.timed_out = captured->timed_out;
  out.output = std::move(captured->output);
  out.ran = has_line(out.output, kRanMarker);
  return out;
}

std::string Kit::helper_script(const std::vector<std::string>& args) const {
  std::string script = quote(helper_);
  for (const std::string& arg : args) script += " " + quote(arg);
  return script;
}

// An attack whose evidence is a file on the host: `broken` says what is wrong there after the
// run ("" when nothing is).
Attack Kit::stays(const std::string& name, const std::string& expected, const std::string& script,
                  std::function<std::string()> broken) {
  return Attack{name, expected, script, {}, [broken](const Ran&) {
                  const std::string wrong = broken();
                  return wrong.empty() ? holds("on the host: unchanged")
                                       : breaks("on the host: " + wrong);
                }};
}

// An attack made by the helper: passes when the helper's call had the expected outcome
// ("refused" or "done").
Attack Kit::helper_call(const std::string& name, const std::string& expected,
                        const std::vector<std::string>& args, bool with_baseline) {
  const bool must_work = expected.rfind("works", 0) == 0;
  return Attack{name, expected, helper_script(args),
                with_baseline ? args : std::vector<std::string>{}, [must_work](const Ran& run) {
                  const std::string word = helper_word(run.output);
                  // What the attack needs first was refused inside (Landlock: no pty to open):
                  // the call itself was never made, so this run proves nothing either way.
                  if (!must_work && word == "setup")
                    return Verdict{AttackResult::kInconclusive,
                                   "not attacked: the sandbox refused what the attack needs first"};
                  if (must_work) return word == "done" ? holds("") : breaks("");
                  return word == "refused" ? holds("") : breaks("");
                }};
}

// A connection to a listener the kit holds on the host: it must be refused and the listener must
// see nothing.
Attack Kit::unreachable(const std::string& name, Listener& listener,
                        const std::vector<std::string>& helper_args) {
  Listener* target = &listener;
  const std::string expected = listener.stream ? "refused; the " + listener.what + " sees nothing"
                                               : "the " + listener.what + " receives nothing";
  return Attack{name, expected, helper_script(helper_args), {}, [target](const Ran& run) {
                  if (!target->ready())
                    return Verdict{AttackResult::kInconclusive,
                                   "not attacked: the kit could not open its listener here"};
                  const bool contacted = target->contacted();
                  const std::string word = helper_word(run.output);
                  const std::string host = "on the host: the " + target->what +
                                           (contacted ? " was reached" : " saw nothing");
                  // A datagram sent into the sandbox's own network (bwrap's namespace) is
                  // lost, not refused: for UDP only what arrived counts.
                  const bool refused = word != "done" || !target->stream;
                  return !contacted && refused ? holds(host) : breaks(host);
                }};
}

namespace json = boost::json;

json::object path_entry(const std::string& path, const char* access) {
  return {{"path", path}, {"access", access}};
}

// A restricted filesystem of `entries`; protected names only when `protect` (otherwise the
// policy would need protected_names from every backend, and that capability is attacked on
// its own).
std::string policy_text(json::array entries, json::object network, bool protect = false) {
  json::object filesystem = {{"kind", "restricted"}, {"entries", std::move(entries)}};
  if (!protect) filesystem["protected_names"] = json::array();
  json::object policy = {
      {"version", 1}, {"filesystem", std::move(filesystem)}, {"network", std::move(network)}};
  return json::serialize(policy);
}

json::object restricted_network() { return {{"mode", "restricted"}}; }

// ":root" readable, `root` writable: the usual shape of a workspace.
json::array workspace(const std::string& root) {
  return {path_entry(":root", "read"), path_entry(root, "write")};
}

// The attack that proves the run works at all: a write inside the writable root lands.
Attack write_inside(const std::string& ws) {
  const std::string file = ws + "/written-inside";
  return Attack{"write_inside_root",
                "works: the file is written inside the writable root",
                "echo inside > " + quote(file),
                {},
                [file](const Ran&) {
                  return read_text(file) == "inside\n"
                             ? holds("on the host: " + file + " holds what was written")
                             : breaks("on the host: " + file + " was not written");
                }};
}

// A file the kit made and the command must not change: "" while it holds `text`.
std::function<std::string()> unchanged(const std::string& path, const std::string& text) {
  return [path, text] {
    if (!exists(path)) return path + " is gone";
    return read_text(path) == text ? std::string() : path + " was changed";
  };
}

std::function<std::string()> absent(const std::string& path) {
  return [path] { return exists(path) ? path + " was created" : std::string(); };
}

// An attack reading a secret: the token must not come out.
Attack unreadable(const std::string& name, const std::string& script, const std::string& secret) {
  return Attack{
      name, "refused: the secret does not come out", script, {}, [secret](const Ran& run) {
        return run.output.find(secret) == std::string::npos
                   ? holds("the secret is not in the output")
                   : breaks("the secret is in the output");
      }};
}

Attack readable(const std::string& name, const std::string& script, const std::string& text) {
  return Attack{name, "works: the file is read", script, {}, [text](const Ran& run) {
                  return run.output.find(text) != std::string::npos
                             ? holds("its content is in the output")
                             : breaks("its content is not in the output");
                }};
}

bool make_dirs(const std::string& path) {
  std::error_code error;
  fs::create_directories(path, error);
  return !error;
}

CapabilityPlan Kit::write_restriction(const std::string& dir) {
  const std::string ws = dir + "/ws";
  const std::string out = dir + "/outside";
  make_dirs(ws);
  make_dirs(out);
  for (const char* name : {"existing", "truncated", "victim", "moved", "linked"})
    write_text(out + "/" + name, "original\n");
  CapabilityPlan plan{
      Capability::kWriteRestriction, policy_text(workspace(ws), restricted_network()), {}};
  const std::string q = quote(out);
  plan.attacks = {
      write_inside(ws),
      stays("create_outside_root", "refused: no file appears outside the writable root",
            "echo pwned > " + q + "/created", absent(out + "/created")),
      stays("append_outside_root", "refused: the file outside the writable root is unchanged",
            "echo pwned >> " + q + "/existing", unchanged(out + "/existing", "original\n")),
      stays("truncate_outside_root", "refused: the file outside the writable root is unchanged",
            ": > " + q + "/truncated", unchanged(out + "/truncated", "original\n")),
      stays("mkdir_outside_root", "refused: no directory appears outside the writable root",
            "mkdir " + q + "/newdir", absent(out + "/newdir")),
      stays("remove_outside_root", "refused: the file outside the writable root stays",
            "rm -f " + q + "/victim", unchanged(out + "/victim", "original\n")),
      stays("rename_into_root", "refused: the file outside the writable root stays where it is",
            "mv " + q + "/moved " + quote(ws + "/moved"), unchanged(out + "/moved", "original\n")),
      stays(
          "hardlink_into_root", "refused: a hard link made inside the root does not reach it",
          "ln " + q + "/linked " + quote(ws + "/link") + " && echo pwned >> " + quote(ws + "/link"),
          unchanged(out + "/linked", "original\n")),
  };
  return plan;
}

CapabilityPlan Kit::read_restriction(const std::string& dir) {
  const std::string ws = dir + "/ws";
  const std::string out = dir + "/outside";
  make_dirs(ws);
  make_dirs(out);
  const std::string secret = token(random_);
  const std::string visible = token(random_);
  write_text(out + "/secret", secret + "\n");
  write_text(out + "/" + secret + "-name", "x\n");  // its name is the secret of the listing
  write_text(ws + "/visible", visible + "\n");
  json::array entries = {path_entry(":minimal", "read"), path_entry(ws, "write")};
  CapabilityPlan plan{Capability::kReadRestriction, policy_text(entries, restricted_network()), {}};
  plan.attacks = {
      readable("read_inside_root", "cat " + quote(ws + "/visible"), visible),
      unreadable("read_outside_roots", "cat " + quote(out + "/secret"), secret),
      unreadable("list_outside_roots", "ls " + quote(out), secret),
  };
  return plan;
}

CapabilityPlan Kit::write_carveouts(const std::string& dir) {
  const std::string ws = dir + "/ws";
  const std::string ro = ws + "/readonly";
  make_dirs(ro);
  for (const char* name : {"existing", "victim"}) write_text(ro + "/" + name, "original\n");
  json::array entries = workspace(ws);
  entries.emplace_back(path_entry(ro, "read"));
  CapabilityPlan plan{Capability::kWriteCarveouts, policy_text(entries, restricted_network()), {}};
  const std::string q = quote(ro);
  plan.attacks = {
      write_inside(ws),
      stays("create_in_carveout", "refused: no file appears in the read-only carve-out",
            "echo pwned > " + q + "/created", absent(ro + "/created")),
      stays("append_in_carveout", "refused: the file in the read-only carve-out is unchanged",
            "echo pwned >> " + q + "/existing", unchanged(ro + "/existing", "original\n")),
      stays("remove_in_carveout", "refused: the file in the read-only carve-out stays",
            "rm -f " + q + "/victim", unchanged(ro + "/victim", "original\n")),
      stays("rename_carveout_away",
            "refused: the carve-out cannot be renamed away and replaced by a writable directory",
            "mv " + q + " " + quote(ws + "/moved") + " && mkdir " + q + " && echo pwned > " + q +
                "/existing",
            unchanged(ro + "/existing", "original\n")),
  };
  return plan;
}

CapabilityPlan Kit::read_carveouts(const std::string& dir) {
  const std::string ws = dir + "/ws";
  const std::string out = dir + "/readable";
  const std::string denied = out + "/denied";
  make_dirs(ws);
  make_dirs(denied);
  const std::string secret = token(random_);
  const std::string visible = token(random_);
  write_text(out + "/visible", visible + "\n");
  write_text(denied + "/secret", secret + "\n");
  write_text(denied + "/" + secret + "-name", "x\n");
  write_text(out + "/denied-file", secret + "\n");
  json::array entries = workspace(ws);
  entries.emplace_back(path_entry(denied, "deny"));
  entries.emplace_back(path_entry(out + "/denied-file", "deny"));
  CapabilityPlan plan{Capability::kReadCarveouts, policy_text(entries, restricted_network()), {}};
  plan.attacks = {
      readable("read_beside_carveout", "cat " + quote(out + "/visible"), visible),
      unreadable("read_in_denied_directory", "cat " + quote(denied + "/secret"), secret),
      unreadable("list_denied_directory", "ls " + quote(denied), secret),
      unreadable("read_denied_file", "cat " + quote(out + "/denied-file"), secret),
  };
  return plan;
}

CapabilityPlan Kit::protected_names(const std::string& dir) {
  const std::string ws = dir + "/ws";
  const std::string git = ws + "/.git";
  make_dirs(git);
  write_text(git + "/config", "[core]\n");
  CapabilityPlan plan{
      Capability::kProtectedNames, policy_text(workspace(ws), restricted_network(), true), {}};
  plan.attacks = {
      write_inside(ws),
      stays("create_codex", "refused: no .codex appears at the top of the writable root",
            "mkdir " + quote(ws + "/.codex"), absent(ws + "/.codex")),
      stays("create_agents", "refused: no .agents appears at the top of the writable root",
            "echo pwned > " + quote(ws + "/.agents"), absent(ws + "/.agents")),
      stays("append_git_config", "refused: .git/config is unchanged",
            "echo pwned >> " + quote(git + "/config"), unchanged(git + "/config", "[core]\n")),
      stays("create_in_git", "refused: no file appears in .git",
            "echo pwned > " + quote(git + "/hooks-planted"), absent(git + "/hooks-planted")),
      stays("rename_git_away", "refused: .git cannot be renamed away and replaced",
            "mv " + quote(git) + " " + quote(ws + "/moved-git") + " && mkdir " + quote(git) +
                " && echo pwned > " + quote(git + "/config"),
            unchanged(git + "/config", "[core]\n")),
  };
  return plan;
}

CapabilityPlan Kit::deny_globs(const std::string& dir) {
  const std::string ws = dir + "/ws";
  make_dirs(ws + "/sub");
  const std::string secret = token(random_);
  const std::string visible = token(random_);
  write_text(ws + "/key.pem", secret + "\n");
  write_text(ws + "/sub/nested.pem", secret + "\n");
  write_text(ws + "/append.pem", secret + "\n");
  write_text(ws + "/plain.txt", visible + "\n");
  json::array entries = workspace(ws);
  entries.emplace_back(json::object{{"glob", ws + "/**/*.pem"}, {"access", "deny"}});
  CapabilityPlan plan{Capability::kDenyGlobs, policy_text(entries, restricted_network()), {}};
  plan.attacks = {
      readable("read_unmatched", "cat " + quote(ws + "/plain.txt"), visible),
      unreadable("read_matching", "cat " + quote(ws + "/key.pem"), secret),
      unreadable("read_matching_nested", "cat " + quote(ws + "/sub/nested.pem"), secret),
      stays("append_matching", "refused: the matching file is unchanged",
            "echo pwned >> " + quote(ws + "/append.pem"),
            unchanged(ws + "/append.pem", secret + "\n")),
  };
  return plan;
}

void Kit::add_listener_attacks(const std::string& dir, CapabilityPlan& out, bool with_inet,
                               bool with_unix) {
  if (with_inet) {
    Listener& tcp = listeners_.emplace_back(inet_listener(AF_INET, SOCK_STREAM));
    out.attacks.push_back(
        unreachable("connect_host_tcp", tcp, {"connect-tcp", tcp.address, tcp.port}));
    Listener& tcp6 = listeners_.emplace_back(inet_listener(AF_INET6, SOCK_STREAM));
    if (tcp6.ready())
      out.attacks.push_back(
          unreachable("connect_host_tcp6", tcp6, {"connect-tcp", tcp6.address, tcp6.port}));
    Listener& udp = listeners_.emplace_back(inet_listener(AF_INET, SOCK_DGRAM));
    out.attacks.push_back(unreachable("send_host_udp", udp, {"send-udp", udp.address, udp.port}));
  }
  if (with_unix) {
    Listener& path = listeners_.emplace_back(unix_listener(dir + "/host.sock", false));
    out.attacks.push_back(unreachable("connect_host_unix", path, {"connect-unix", path.address}));
    const std::string name = "sbx-verify-" + std::to_string(::getpid()) + "-" + token(random_);
    Listener& abstract = listeners_.emplace_back(unix_listener(name, true));
    out.attacks.push_back(
        unreachable("connect_host_abstract", abstract, {"connect-abstract", abstract.address}));
  }
}

CapabilityPlan Kit::network_block(const std::string& dir) {
  const std::string ws = dir + "/ws";
  make_dirs(ws);
  CapabilityPlan plan{
      Capability::kNetworkBlock, policy_text(workspace(ws), restricted_network()), {}};
  add_listener_attacks(dir, plan, true, true);
  return plan;
}

CapabilityPlan Kit::proxy_network(const std::string& dir) {
  const std::string ws = dir + "/ws";
  make_dirs(ws);
  json::object network = {{"mode", "proxy"}, {"allowed_domains", json::array{"example.com"}}};
  CapabilityPlan plan{Capability::kProxyNetwork, policy_text(workspace(ws), network), {}};
  plan.attacks.push_back(helper_call("connect_proxy", "works: the proxy of $HTTP_PROXY accepts",
                                     {"connect-proxy"}, false));
  add_listener_attacks(dir, plan, true, true);
  return plan;
}

CapabilityPlan Kit::unix_socket_allowlist(const std::string& dir) {
  const std::string ws = dir + "/ws";
  make_dirs(ws);
  Listener& listed = listeners_.emplace_back(unix_listener(dir + "/listed.sock", false));
  json::object network = {{"mode", "restricted"},
                          {"unix_sockets", json::array{json::string(listed.address)}}};
  CapabilityPlan plan{Capability::kUnixSocketAllowlist, policy_text(workspace(ws), network), {}};
  Listener* target = &listed;
  plan.attacks.push_back(Attack{
      "connect_listed",
      "works: the listed " + listed.what + " is reached",
      helper_script({"connect-unix", listed.address}),
      {},
      [target](const Ran& run) {
        const bool contacted = target->contacted();
        const std::string host =
            "on the host: the " + target->what + (contacted ? " was reached" : " saw nothing");
        return contacted && helper_word(run.output) == "done" ? holds(host) : breaks(host);
      }});
  add_listener_attacks(dir, plan, false, true);
  return plan;
}

CapabilityPlan Kit::syscall_filter(const std::string& dir) {
  const std::string ws = dir + "/ws";
  make_dirs(ws);
  CapabilityPlan plan{
      Capability::kSyscallFilter, policy_text(workspace(ws), restricted_network()), {}};
  const auto no_bit = [](const std::string& path, mode_t bit, const char* name) {
    return [path, bit, name] {
      return (mode_of(path) & bit) != 0 ? path + " is " + name : std::string();
    };
  };
  const std::string suid = ws + "/setuid";
  const std::string sgid = ws + "/setgid";
  const std::string created = ws + "/created-setuid";
  plan.attacks = {
      stays("chmod_setuid", "refused: the file in the writable root does not become set-user-ID",
            "touch " + quote(suid) + " && chmod u+s " + quote(suid),
            no_bit(suid, S_ISUID, "set-user-ID")),
      stays("chmod_setgid", "refused: the file in the writable root does not become set-group-ID",
            "touch " + quote(sgid) + " && chmod g+s " + quote(sgid),
            no_bit(sgid, S_ISGID, "set-group-ID")),
      stays("create_setuid", "refused: open(O_CREAT) with mode 04755 makes no set-user-ID file",
            helper_script({"create-setuid", created}), no_bit(created, S_ISUID, "set-user-ID")),
      helper_call("ptrace", "refused: ptrace(PTRACE_ATTACH) of its own child", {"ptrace"}, true),
      helper_call("tiocsti", "refused: ioctl(TIOCSTI) on a terminal", {"tiocsti"}, true),
      helper_call("unshare_user", "refused: unshare(CLONE_NEWUSER)", {"unshare-user"}, true),
      helper_call("add_key", "refused: add_key() to its own keyring", {"add-key"}, true),
      helper_call("io_uring", "refused: io_uring_setup()", {"io-uring"}, true),
  };
  return plan;
}

CapabilityPlan Kit::local_binding(const std::string& dir) {
  const std::string ws = dir + "/ws";
  make_dirs(ws);
  json::object network = {{"mode", "restricted"}, {"allow_local_binding", true}};
  CapabilityPlan plan{Capability::kLocalBinding, policy_text(workspace(ws), network), {}};
  plan.attacks.push_back(helper_call("listen_loopback",
                                     "works: listen on a loopback port and connect to it",
                                     {"listen-local"}, false));
  add_listener_attacks(dir, plan, true, false);
  return plan;
}

CapabilityPlan Kit::unix_socket_block(const std::string& dir) {
  const std::string ws = dir + "/ws";
  make_dirs(ws);
  CapabilityPlan plan{Capability::kUnixSocketBlock,
                      policy_text(workspace(ws), json::object{{"mode", "enabled"}}),
                      {}};
  add_listener_attacks(dir, plan, false, true);
  return plan;
}

CapabilityPlan Kit::plan(Capability capability, const std::string& dir) {
  switch (capability) {
    case Capability::kWriteRestriction:
      return write_restriction(dir);
    case Capability::kReadRestriction:
      return read_restriction(dir);
    case Capability::kWriteCarveouts:
      return write_carveouts(dir);
    case Capability::kReadCarveouts:
      return read_carveouts(dir);
    case Capability::kProtectedNames:
      return protected_names(dir);
    case Capability::kDenyGlobs:
      return deny_globs(dir);
    case Capability::kNetworkBlock:
      return network_block(dir);
    case Capability::kProxyNetwork:
      return proxy_network(dir);
    case Capability::kUnixSocketAllowlist:
      return unix_socket_allowlist(dir);
    case Capability::kSyscallFilter:
      return syscall_filter(dir);
    case Capability::kLocalBinding:
      return local_binding(dir);
    case Capability::kUnixSocketBlock:
      return unix_socket_block(dir);
  }
  return CapabilityPlan{capability, {}, {}};
}

// verified: none failed and one passed; failed: one failed; inconclusive: all inconclusive.
VerifyStatus status_of(const std::vector<VerifyAttack>& attacks) {
  bool passed = false;
  for (const VerifyAttack& attack : attacks) {
    if (attack.result == AttackResult::kFail) return VerifyStatus::kFailed;
    if (attack.result == AttackResult::kPass) passed = true;
  }
  return passed ? VerifyStatus::kVerified : VerifyStatus::kInconclusive;
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& word : argv) out += (out.empty() ? "" : " ") + quote(word);
  return out;
}

VerifyCapability Kit::run(Capability capability) {
  const std::string dir = scratch_ + "/" + std::string(to_string(capability));
  make_dirs(dir);
  listeners_.clear();
  CapabilityPlan plan = this->plan(capability, dir);
  const std::string policy_file = dir + "/policy.json";
  write_text(policy_file, plan.policy);
  VerifyCapability out{capability, VerifyStatus::kFailed, plan.policy, {}};
  const std::string cwd = dir + "/ws";
  for (Attack& attack : plan.attacks) {
    const std::vector<std::string> argv = command(policy_file, cwd, attack.script);
    VerifyAttack result{attack.name, command_text(argv), attack.expected, {}, AttackResult::kFail};
    if (!attack.baseline.empty()) {
      std::vector<std::string> direct = {helper_};
      direct.insert(direct.end(), attack.baseline.begin(), attack.baseline.end());
      const Ran baseline = execute(direct, cwd);
      if (helper_word(baseline.output) != "done") {
        result.result = AttackResult::kInconclusive;
        result.observed =
            "not attacked: the call fails outside any sandbox too (" + describe_run(baseline) + ")";
        out.attacks.push_back(std::move(result));
        continue;
      }
    }
    const Ran ran = execute(argv, cwd);
    const Verdict verdict = attack.judge(ran);
    result.result = ran.ran ? verdict.result : AttackResult::kFail;
    result.observed = (ran.ran ? "" : "the command never ran: ") + describe_run(ran) +
                      (verdict.host.empty() ? "" : "; " + verdict.host);
    out.attacks.push_back(std::move(result));
  }
  listeners_.clear();
  out.status = status_of(out.attacks);
  return out;
}

// The scratch directory, removed with everything in it when the kit ends.
class Scratch {
 public:
  static Result<Scratch> make() {
    const char* tmp = std::getenv("TMPDIR");
    std::string base = tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp";
    std::string pattern = base + "/sbx-verify-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      return Error{"cannot make a scratch directory under " + base + ": " + std::strerror(errno)};
    // Canonical: sbx reports and compares canonical paths.
    std::error_code error;
    const fs::path canonical = fs::canonical(pattern, error);
    Scratch out;
    out.path_ = error ? pattern : canonical.string();
    make_dirs(out.path_ + "/config");
    return out;
  }
  Scratch() = default;
  Scratch(Scratch&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  Scratch& operator=(Scratch&&) = delete;
  ~Scratch() {
    if (path_.empty()) return;
    // A lying backend may have left a set-ID file or read-only modes behind: removal is by the
    // kit's own user, who owns everything in it.
    std::error_code error;
    fs::remove_all(path_, error);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace
}  // namespace sbx::cli::verify_kit

namespace sbx::cli {

using verify_kit::Kit;
using verify_kit::Scratch;

Result<VerifyReport> verify_backend(const LoadedPlugin& plugin, const ProbeReport& probe,
                                    const GlobalOptions& globals) {
  VerifyReport report;
  report.backend = plugin.name;
  report.version = plugin.version;
  report.available = probe.available;
  report.summary = probe.summary;
  report.declared = probe.available ? probe.capabilities : CapabilitySet{};
  Result<InstallLayout> layout = install_layout();
  if (!layout.ok()) return layout.failure();
  // The helper lies next to sbx-stage2 (<prefix>/libexec/sbx).
  const std::string helper =
      std::filesystem::path(layout->stage2_path).parent_path().string() + "/sbx-verify-attack";
  if (report.declared.empty() == false && ::access(helper.c_str(), X_OK) != 0)
    return Error{"the attack helper " + helper + " is missing (" + std::strerror(errno) +
                 "); reinstall sbx"};
  Result<Scratch> scratch = Scratch::make();
  if (!scratch.ok()) return scratch.failure();
  Kit kit(plugin, globals, layout->libsbx_path, helper, scratch->path());
  report.verified = true;
  for (Capability capability : kAllCapabilities) {
    if (!report.declared.has(capability)) {
      report.capabilities.push_back(
          VerifyCapability{capability, VerifyStatus::kNotDeclared, {}, {}});
      continue;
    }
    report.capabilities.push_back(kit.run(capability));
    if (report.capabilities.back().status != VerifyStatus::kVerified) report.verified = false;
  }
  if (!probe.available) report.verified = false;
  return report;
}

std::string verify_report_text(const VerifyReport& report) {
  std::ostringstream out;
  out << printable(report.backend) << ' ' << printable(report.version) << "  "
      << (report.available ? "available" : "NOT AVAILABLE") << " - " << printable(report.summary)
      << '\n';
  std::size_t declared = 0;
  std::size_t verified = 0;
  for (const VerifyCapability& one : report.capabilities) {
    if (one.status == VerifyStatus::kNotDeclared) continue;
    ++declared;
    if (one.status == VerifyStatus::kVerified) ++verified;
  }
  std::vector<std::vector<std::string>> rows;
  for (const VerifyCapability& one : report.capabilities) {
    std::size_t passed = 0;
    std::size_t inconclusive = 0;
    for (const VerifyAttack& attack : one.attacks) {
      if (attack.result == AttackResult::kPass) ++passed;
      if (attack.result == AttackResult::kInconclusive) ++inconclusive;
    }
    const std::string status = one.status == VerifyStatus::kVerified       ? "verified"
                               : one.status == VerifyStatus::kFailed       ? "FAILED"
                               : one.status == VerifyStatus::kInconclusive ? "INCONCLUSIVE"
                                                                           : "not declared";
    rows.push_back(
        {status, std::string(to_string(one.capability)),
         one.attacks.empty()
             ? ""
             : std::to_string(passed) + " of " + std::to_string(one.attacks.size()) +
                   " attacks held" +
                   (inconclusive == 0 ? ""
                                      : ", " + std::to_string(inconclusive) + " inconclusive")});
  }
  out << render_table(rows, "  ");
  for (const VerifyCapability& one : report.capabilities) {
    for (const VerifyAttack& attack : one.attacks) {
      if (attack.result == AttackResult::kPass) continue;
      out << '\n'
          << to_string(one.capability) << ": " << attack.name << ' '
          << (attack.result == AttackResult::kFail ? "FAILED" : "inconclusive") << '\n'
          << "  expected: " << printable(attack.expected) << '\n'
          << "  observed: " << printable(attack.observed) << '\n'
          << "  command:  " << printable(attack.command) << '\n';
    }
  }
  out << '\n'
      << (report.verified ? "verified: " : "NOT verified: ") << verified << " of " << declared
      << " declared capabilities held under attack"
      << (report.available ? "" : "; the backend is not available here") << '\n';
  return out.str();
}

}  // namespace sbx::cli
