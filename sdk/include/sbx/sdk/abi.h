/* sbx plugin ABI, version 1 (C-compatible).
 *
 * A backend plugin is a shared object exporting exactly one symbol, sbx_plugin_entry_v1, which
 * returns a pointer to a static sbx_plugin_v1 descriptor. The host validates the descriptor
 * (struct size, ABI major/minor, toolchain fingerprint, name) before it calls create(); only
 * then does any C++ object cross the boundary. Everything the plugin needs from the host comes
 * through the sbx_host_v1 table passed to create(): plugins never link libsbx.
 *
 * Compatibility rules (enforced by the host, in this order):
 *   abi_major == SBX_ABI_MAJOR, abi_minor <= SBX_ABI_MINOR (a newer plugin is refused),
 *   struct_size >= SBX_PLUGIN_V1_MIN_SIZE, fingerprint == SBX_TOOLCHAIN_FINGERPRINT.
 * Growth: new fields are appended and SBX_ABI_MINOR is bumped; an incompatible change bumps
 * SBX_ABI_MAJOR and renames the entry symbol (sbx_plugin_entry_v2).
 *
 * History: 1.0 first release. 1.1 appended sbx::TransformRequest::proxy_socket (types.hpp) for
 * network.mode == proxy; a 1.0 plugin never reads it, so the host still loads 1.0 plugins.
 * 1.2 appended sbx_host_v1.prepare_child, which a plugin that starts processes itself calls in
 * the child before execve so the run's resource limits hold; the host still loads older plugins.
 * 1.3 appended sbx::ExecPlan::host_paths (types.hpp): what exec() must manage on the host,
 * which used to travel as text in the notes. A plugin built for 1.0-1.2 returns and takes the
 * older, shorter ExecPlan (sbx::ExecPlanAbi1_2): the host calls it through that layout and
 * converts, so it still loads and runs, with empty host_paths.
 * 1.4 appended sbx::ExecPlan::windows (types.hpp): the windows backend's token and ACL plan,
 * which used to travel as text in the notes. A plugin built for 1.3 returns and takes the
 * ExecPlan of that time (sbx::ExecPlanAbi1_3) and is converted the same way, with empty
 * windows; older plugins as above. 1.4 also appended sbx::Capability::kLocalBinding, which
 * older plugins never declare: the manager passes them over for policies that need it.
 * 1.5 appended sbx_host_v1.report_network_refusal (a backend names each connection its
 * sandbox refused, for the run's report) and sbx::Capability::kUnixSocketBlock (host unix
 * sockets, pathname and abstract, closed unless listed, also with the network enabled). A 1.4
 * plugin never calls the one nor declares the other: the host still loads it, and the manager
 * passes it over for policies that need the capability (every policy with the network enabled).
 * 1.6 appended sbx_host_v1.run_started: a backend that starts the sandbox itself says when its
 * first process exists, and the host begins then the work it does alongside the run (the
 * created-names scan) instead of before the spawn. A 1.5 plugin never calls it: the host
 * still loads it, and says it itself right before that plugin's exec (as before 1.6).
 */
#ifndef SBX_SDK_ABI_H_
#define SBX_SDK_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define SBX_ABI_MAJOR 1
#define SBX_ABI_MINOR 6
/* SHA-256 of this file with the quoted value below left empty. Any edit to this header fails
 * the ABI guard test (tests/unit/sdk) until someone reviews the ABI, bumps SBX_ABI_MINOR
 * (append-only growth) or SBX_ABI_MAJOR (anything else) as needed, and records the new digest. */
#define SBX_ABI_HEADER_SHA256 "a4b9b2e53f2e31e878dc40bcb5a0a36e4fb846f447c352c836faec83f6dfa519"
#define SBX_PLUGIN_ENTRY_SYMBOL "sbx_plugin_entry_v1"

#if defined(_WIN32)
#define SBX_PLUGIN_EXPORT __declspec(dllexport)
#else
#define SBX_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Log levels passed to sbx_host_v1.log. */
enum sbx_log_level {
  SBX_LOG_TRACE = 0,
  SBX_LOG_DEBUG = 1,
  SBX_LOG_INFO = 2,
  SBX_LOG_WARN = 3,
  SBX_LOG_ERROR = 4
};

/* Services the host offers a plugin. Filled by core, valid for the life of the process. */
typedef struct sbx_host_v1 {
  uint32_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  const char* host_version;
  /* Absolute path of the verified sbx-stage2 helper, or NULL where the host has none. */
  const char* stage2_path;
  void* ctx;
  /* Writes one log line through the host's logger. Never NULL. */
  void (*log)(void* ctx, int level, const char* message, size_t length);
  /* Runs an sbx::ExecPlan (plan) and stores an sbx::ExitStatus (status_out). Returns 0 on
   * success; otherwise writes a NUL-terminated message into error (at most error_size bytes)
   * and returns non-zero. The C++ types are valid to pass because the fingerprint matched. */
  int (*spawn)(void* ctx, const void* plan, void* status_out, char* error, size_t error_size);
  /* ABI 1.2. For a plugin that starts the sandbox's first process itself instead of through
   * spawn: call it in that child after fork/vfork and before execve. It puts the child under
   * the resource limits of the run in progress on the calling thread (its cgroup, its rlimits);
   * with no run in progress it does nothing. Async-signal-safe and writes no memory but its own
   * stack. Returns 0, or an errno value: the child must then report failure and not exec.
   * Read it only when struct_size covers it. */
  int (*prepare_child)(void* ctx);
  /* ABI 1.5. Reports one connection the sandbox refused, for the run's report (`sbx exec
   * --json` "network_refusals"). kind is "unix" (address: the socket's path, or "@name" for an
   * abstract one, as the command gave it) or "ip" (address: "ADDRESS:PORT", IPv6 in brackets);
   * the address is length bytes, not NUL-terminated, any bytes. Call it from the thread that
   * called exec(), before exec() returns: the host files it under the run in progress on that
   * thread, and ignores it when there is none. Never NULL in a 1.5 table; read it only when
   * struct_size covers it. */
  void (*report_network_refusal)(void* ctx, const char* kind, const char* address,
                                 size_t length);
  /* ABI 1.6. Tells the host that the run's first process exists: call it in the parent, from
   * the thread that called exec(), once the spawn has returned (never in the child, never
   * before the process is started). The host then begins what it does alongside the run (the
   * created-names scan), so that this overlaps the sandbox's set-up instead of preceding it.
   * A second call, or a call outside a run, does nothing; a backend that never calls it only
   * loses that overlap (the host does the work after the run). Never NULL in a 1.6 table;
   * read it only when struct_size covers it. */
  void (*run_started)(void* ctx);
} sbx_host_v1;

/* The plugin's self-description. Static storage in the plugin; never freed. */
typedef struct sbx_plugin_v1 {
  uint32_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  const char* name;        /* [a-z0-9-]{1,32}, unique among loaded plugins */
  const char* version;     /* the plugin's own version, free-form */
  const char* fingerprint; /* SBX_TOOLCHAIN_FINGERPRINT of the plugin's build */
  const char* description; /* one line for `sbx backends` */
  /* Returns an sbx::Backend* (as void*), or NULL on failure. Must not throw. */
  void* (*create)(const sbx_host_v1* host);
  /* Destroys an object returned by create(). */
  void (*destroy)(void* backend);
  void* reserved[4]; /* must be NULL */
} sbx_plugin_v1;

/* The smallest descriptor a v1.0 host accepts: everything up to and including destroy. */
#define SBX_PLUGIN_V1_MIN_SIZE (offsetof(sbx_plugin_v1, destroy) + sizeof(void (*)(void*)))

typedef const sbx_plugin_v1* (*sbx_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

/* Toolchain fingerprint: everything that changes the layout of the C++ standard library types
 * crossing the boundary (std::string, std::vector). Compiled into host and plugin alike. */
#define SBX_FP_STR2(x) #x
#define SBX_FP_STR(x) SBX_FP_STR2(x)
#if defined(__GLIBCXX__)
#if defined(_GLIBCXX_DEBUG)
#define SBX_FP_DEBUG "-debug"
#else
#define SBX_FP_DEBUG ""
#endif
#define SBX_FP_LIB "libstdc++-cxx11abi" SBX_FP_STR(_GLIBCXX_USE_CXX11_ABI) SBX_FP_DEBUG
#elif defined(_LIBCPP_VERSION)
#define SBX_FP_LIB "libc++-abi" SBX_FP_STR(_LIBCPP_ABI_VERSION)
#elif defined(_MSC_VER)
#define SBX_FP_LIB "msvc-" SBX_FP_STR(_MSC_VER) "-idl" SBX_FP_STR(_ITERATOR_DEBUG_LEVEL)
#else
#define SBX_FP_LIB "unknown-stdlib"
#endif
#define SBX_TOOLCHAIN_FINGERPRINT \
  "sbx-abi" SBX_FP_STR(SBX_ABI_MAJOR) ";" SBX_FP_LIB ";ptr" SBX_FP_STR(__SIZEOF_POINTER__)

#endif /* SBX_SDK_ABI_H_ */
