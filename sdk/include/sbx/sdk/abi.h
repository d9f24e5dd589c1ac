/* sbx plugin ABI, version 2 (C-compatible).
 *
 * A backend plugin is a shared object exporting exactly one symbol, sbx_plugin_entry_v2, which
 * returns a pointer to a static sbx_plugin_v2 descriptor. The host validates the descriptor
 * (struct size, ABI major/minor, toolchain fingerprint, name) before it calls create(); only
 * then does any C++ object cross the boundary. Everything the plugin needs from the host comes
 * through two tables: sbx_host_v2 (process-wide, passed to create()) and sbx_run_v2 (one per
 * run, passed to exec() with the run's context): plugins never link libsbx and never depend on
 * thread-local state of the host.
 *
 * Compatibility rules (enforced by the host, in this order):
 *   the entry symbol is sbx_plugin_entry_v2 (a plugin exporting only sbx_plugin_entry_v1 was
 *   built for ABI 1.x and is refused with its name, its ABI and the fix: rebuild against the
 *   2.0 SDK), abi_major == SBX_ABI_MAJOR, abi_minor <= SBX_ABI_MINOR (a newer plugin is
 *   refused), struct_size >= SBX_PLUGIN_V2_MIN_SIZE, fingerprint == SBX_TOOLCHAIN_FINGERPRINT.
 * Growth, designed once: the C++ types crossing the boundary (sdk/types.hpp: TransformRequest,
 * ExecPlan, ...) are fixed for the major version. What a backend's exec() needs beyond the
 * displayable plan travels in its own opaque sbx::PlanDetail (types.hpp), which only that
 * backend reads, so no new plan field is ever needed for one backend. New host services are
 * appended to sbx_host_v2 or sbx_run_v2, each of which starts with its struct_size: a plugin
 * reads a slot only when struct_size covers it (SBX_TABLE_HAS) and otherwise does without it,
 * so a plugin built for 2.N runs on any 2.M host with M >= N, with no adapter in the host.
 * Anything else bumps SBX_ABI_MAJOR and renames the entry symbol.
 *
 * History: 1.0-1.6 (2026-12): one process-wide table whose per-run services reached the run
 * through thread-local state, and per-backend fields in the shared ExecPlan, each converted
 * for older plugins by host adapters. 2.0: the per-run table, PlanDetail, size-checked slots;
 * 1.x plugins are refused. 2.1: the run's standard descriptors (stdio_fd) and its end
 * (cancel_fd), and exec() on several runs at once; the host gives a plugin built for 2.0 neither
 * (only the caller's own stdio, no cancel or time-out, one exec() at a time). 2.2: whether the
 * run takes the caller's signals for the command (forward_signals); a plugin built for 2.1
 * forwards them whatever the caller asked, as every run did before. 2.3: the toolchain caches a
 * backend mounts copy-on-write (types.hpp TransformRequest::cache_overlays, appended), given only
 * to a backend whose probe passes kCacheOverlayCheck (backend.hpp), which a plugin built for 2.2
 * never does.
 */
#ifndef SBX_SDK_ABI_H_
#define SBX_SDK_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define SBX_ABI_MAJOR 2
#define SBX_ABI_MINOR 3
/* SHA-256 of this file with the quoted value below left empty. Any edit to this header fails
 * the ABI guard test (tests/unit/sdk) until someone reviews the ABI, bumps SBX_ABI_MINOR
 * (append-only growth) or SBX_ABI_MAJOR (anything else) as needed, and records the new digest. */
#define SBX_ABI_HEADER_SHA256 "a03851d45bb6d416cfd619208e200db7553092f868d545cae65c1dfd568bb3d6"
#define SBX_PLUGIN_ENTRY_SYMBOL "sbx_plugin_entry_v2"
/* The entry symbol of ABI 1.x plugins: the host looks for it only to name such a plugin in its
 * refusal; it never calls create() of one. */
#define SBX_PLUGIN_ENTRY_SYMBOL_V1 "sbx_plugin_entry_v1"

/* True if the size-versioned table `table` (sbx_host_v2 or sbx_run_v2) has the slot `member`:
 * its struct_size covers the member and the slot is not NULL. */
#define SBX_TABLE_HAS(table, type, member)                                                        \
  ((table) != NULL && (table)->struct_size >= offsetof(type, member) + sizeof((table)->member) && \
   (table)->member != NULL)

#if defined(_WIN32)
#define SBX_PLUGIN_EXPORT __declspec(dllexport)
#else
#define SBX_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Log levels passed to sbx_host_v2.log. */
enum sbx_log_level {
  SBX_LOG_TRACE = 0,
  SBX_LOG_DEBUG = 1,
  SBX_LOG_INFO = 2,
  SBX_LOG_WARN = 3,
  SBX_LOG_ERROR = 4
};

/* The services of one run, made by the host for one call of a backend's exec() and valid until
 * that call returns. Size-versioned: grows by appending; read a slot only when struct_size
 * covers it (SBX_TABLE_HAS). Every slot of 2.0 to 2.2 is non-NULL in a table the host makes.
 * From 2.1 the host may call exec() for several runs at once (each with its own table), from
 * several threads, also while another thread calls transform(). */
typedef struct sbx_run_v2 {
  uint32_t struct_size;
  void* ctx; /* the run; passed back to every slot */
  /* For a plugin that starts the sandbox's first process itself instead of through spawn:
   * call it in that child after fork/vfork and before execve. It puts the child under this
   * run's resource limits (its cgroup, its rlimits); a run without limits does nothing.
   * Async-signal-safe, and writes no memory but its own stack. Returns 0, or an errno value:
   * the child must then report failure and not exec. */
  int (*prepare_child)(void* ctx);
  /* Reports one connection the sandbox refused, for the run's report (`sbx exec --json`
   * "network_refusals"). kind is "unix" (address: the socket's path, or "@name" for an abstract
   * one, as the command gave it) or "ip" (address: "ADDRESS:PORT", IPv6 in brackets); the
   * address is length bytes, not NUL-terminated, any bytes. From any thread, before exec()
   * returns. */
  void (*report_network_refusal)(void* ctx, const char* kind, const char* address, size_t length);
  /* Tells the host that the run's first process exists: call it in the parent once the spawn
   * returned (never in the child, never before the process is started). The host then begins
   * what it does alongside the run (the created-names scan), so that this overlaps the
   * sandbox's set-up. A second call does nothing; a backend that never calls it only loses that
   * overlap (the host does the work after the run). */
  void (*run_started)(void* ctx);
  /* 2.1. The descriptor of the host process that the command is to have as its standard
   * descriptor `which` (0 stdin, 1 stdout, 2 stderr), or -1: the command has none there (closed).
   * The host's own 0, 1 or 2 when the caller passes its stdio on. It may be close-on-exec and
   * have any number (0-2 included): the child that becomes the sandbox places it at `which`
   * (posix_child.hpp place_standard_fds), inheritable, before anything else is placed. Valid
   * until exec() returns; never closed by the backend. What passes for the command's stdio is
   * also what the backend checks for sockets (inherited_sockets.hpp) and where it writes its
   * own messages about the run (a failed step, "command not found"). A 2.1 backend must honour
   * it: the host refuses stdio other than its own for a plugin built for 2.0. */
  int (*stdio_fd)(void* ctx, int which);
  /* 2.1. A descriptor that becomes readable (POLLIN) when the run is to end before the command
   * does (the caller's cancel or time-out), or -1 when nothing can end it. A 2.1 backend polls
   * it while it waits and, once readable, kills everything the run started (the sandbox's whole
   * process tree, not only its first process) and returns from exec() as soon as that has
   * ended; the host reports why. The backend never reads, writes or closes it (other watchers of
   * the same run see the same readiness). */
  int (*cancel_fd)(void* ctx);
  /* 2.2. Non-zero: the signals other processes send the host (SIGINT, SIGTERM, SIGHUP, SIGQUIT,
   * SIGUSR1, SIGUSR2, SIGWINCH) are the command's, and the backend passes them on to it while
   * the run goes on (`sbx exec`, a transparent wrapper). 0: they are the host process's own (an
   * agent embedding libsbx, whose Ctrl-C must reach its own handler): the backend installs no
   * handler, opens no signalfd for them (one would take them from the host's threads too) and
   * leaves every disposition as it was; the run ends through cancel_fd. */
  int (*forward_signals)(void* ctx);
} sbx_run_v2;

/* Services the host offers a plugin. Filled by core, valid for the life of the process.
 * Size-versioned like sbx_run_v2. */
typedef struct sbx_host_v2 {
  uint32_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  const char* host_version;
  /* Absolute path of the verified sbx-stage2 helper, or NULL where the host has none. */
  const char* stage2_path;
  void* ctx;
  /* Writes one log line through the host's logger. Never NULL. */
  void (*log)(void* ctx, int level, const char* message, size_t length);
  /* Runs an sbx::ExecPlan (plan) under the run `run` (the table exec() was given) and stores an
   * sbx::ExitStatus (status_out). Returns 0 on success; otherwise writes a NUL-terminated
   * message into error (at most error_size bytes) and returns non-zero. The C++ types are
   * valid to pass because the fingerprint matched. Never NULL. */
  int (*spawn)(void* ctx, const sbx_run_v2* run, const void* plan, void* status_out, char* error,
               size_t error_size);
} sbx_host_v2;

/* The plugin's self-description. Static storage in the plugin; never freed. The leading
 * fields up to name have the same layout in every major version, so a host can name a plugin
 * built for another major in its refusal. */
typedef struct sbx_plugin_v2 {
  uint32_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  const char* name;        /* [a-z0-9-]{1,32}, unique among loaded plugins */
  const char* version;     /* the plugin's own version, free-form */
  const char* fingerprint; /* SBX_TOOLCHAIN_FINGERPRINT of the plugin's build */
  const char* description; /* one line for `sbx backends` */
  /* Returns an sbx::Backend* (as void*), or NULL on failure. Must not throw. */
  void* (*create)(const sbx_host_v2* host);
  /* Destroys an object returned by create(). */
  void (*destroy)(void* backend);
  void* reserved[4]; /* must be NULL */
} sbx_plugin_v2;

/* The smallest descriptor a 2.0 host accepts: everything up to and including destroy. */
#define SBX_PLUGIN_V2_MIN_SIZE (offsetof(sbx_plugin_v2, destroy) + sizeof(void (*)(void*)))

typedef const sbx_plugin_v2* (*sbx_plugin_entry_fn)(void);

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
