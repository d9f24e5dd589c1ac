// Fixed SBPL sections. Only constant text lives here: nothing from a policy or a caller.
#pragma once

#include <string_view>

namespace sbx::seatbelt::sections {

// Deny by default, then the minimum every process needs regardless of policy.
inline constexpr std::string_view kBase = R"SBPL((version 1)
(deny default)

; Processes: run and fork programs; signal and inspect only processes of this sandbox.
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))

; /dev/null for everyone; the vnode check keeps a planted file or link from matching.
(allow file-read* file-write-data
  (require-all (literal "/dev/null") (vnode-type CHARACTER-DEVICE)))

; Read-only hardware and kernel facts runtimes ask for (CPU count and features, page size --
; Go's runtime aborts without hw.pagesize --, CPU frequency, OS version, semaphore limits for
; Python's ProcessPoolExecutor, process-group listings), and Java's cputype switch.
(allow sysctl-read
  (sysctl-name "hw.activecpu") (sysctl-name "hw.busfrequency_compat")
  (sysctl-name "hw.byteorder") (sysctl-name "hw.cacheconfig")
  (sysctl-name "hw.cachelinesize_compat") (sysctl-name "hw.cpufamily")
  (sysctl-name "hw.cpufrequency") (sysctl-name "hw.cpufrequency_compat")
  (sysctl-name "hw.cputype")
  (sysctl-name "hw.l1dcachesize_compat") (sysctl-name "hw.l1icachesize_compat")
  (sysctl-name "hw.l2cachesize_compat") (sysctl-name "hw.l3cachesize_compat")
  (sysctl-name "hw.logicalcpu") (sysctl-name "hw.logicalcpu_max") (sysctl-name "hw.machine")
  (sysctl-name "hw.memsize") (sysctl-name "hw.model") (sysctl-name "hw.ncpu")
  (sysctl-name "hw.nperflevels") (sysctl-name "hw.packages") (sysctl-name "hw.pagesize")
  (sysctl-name "hw.pagesize_compat") (sysctl-name "hw.physicalcpu")
  (sysctl-name "hw.physicalcpu_max") (sysctl-name "hw.tbfrequency_compat")
  (sysctl-name "hw.vectorunit") (sysctl-name-prefix "hw.optional.")
  (sysctl-name-prefix "hw.perflevel")
  (sysctl-name "kern.argmax") (sysctl-name "kern.hostname") (sysctl-name "kern.maxfilesperproc")
  (sysctl-name "kern.maxproc") (sysctl-name "kern.osproductversion")
  (sysctl-name "kern.osrelease") (sysctl-name "kern.ostype") (sysctl-name "kern.osvariant_status")
  (sysctl-name "kern.osversion") (sysctl-name "kern.secure_kernel")
  (sysctl-name "kern.sysv.semmns") (sysctl-name "kern.usrstack64") (sysctl-name "kern.version")
  (sysctl-name-prefix "kern.proc.pgrp.") (sysctl-name-prefix "kern.proc.pid.")
  (sysctl-name "machdep.cpu.brand_string") (sysctl-name-prefix "machdep.cpu.")
  (sysctl-name "sysctl.proc_cputype") (sysctl-name "vm.loadavg"))
(allow sysctl-write (sysctl-name "kern.grade_cputype"))

; User and group lookups (getpwuid), power assertions, and the root power domain.
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.PowerManagement.control"))
(allow iokit-open (iokit-registry-entry-class "RootDomainUserClient"))

; POSIX semaphores (Python multiprocessing) and the shared memory names libomp registers.
(allow ipc-posix-sem)
(allow ipc-posix-shm-read-data ipc-posix-shm-write-create ipc-posix-shm-write-data
  ipc-posix-shm-write-unlink
  (ipc-posix-name-regex #"^/__KMP_REGISTERED_LIB_[0-9]+$"))

; Terminals: new pseudo-terminals, ioctls on terminals the command inherited, and its
; controlling terminal. Other terminals cannot be opened through these rules.
(allow pseudo-tty)
(allow file-read* file-write* file-ioctl (literal "/dev/ptmx"))
(allow file-read* file-write*
  (require-all (regex #"^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty")))
(allow file-ioctl (regex #"^/dev/ttys[0-9]+$"))
(allow file-read-data file-write-data file-ioctl (literal "/dev/tty"))
)SBPL";

// Network enabled: "enabled" means the internet and other machines, not the host's local
// services, so after the blanket allows every unix-socket connect and bind is taken back
// (docker, ssh-agent, tmux, D-Bus-like services would each be an escape). Listed sockets
// (network.unix_sockets) are allowed again after this. The one system socket given back:
// mDNSResponder, because getaddrinfo() on macOS asks it over this socket -- without it the
// enabled network could not resolve a name. It answers DNS and Bonjour queries only. Not in
// proxy mode, where the proxy resolves names and a DNS path of its own would let a command send
// data out in the names it looks up. (syslog's socket comes with ":minimal", not here.)
// macOS has no abstract unix sockets, so pathname sockets are all there is to close.
inline constexpr std::string_view kHostUnixSocketsClosed =
    R"SBPL(; Host unix sockets: closed (network.unix_sockets re-allows listed ones below).
(deny network-outbound (remote unix-socket))
(deny network-bind (local unix-socket))
; DNS: getaddrinfo() talks to mDNSResponder over its unix socket.
(allow system-socket (socket-domain AF_UNIX))
(allow network-outbound (remote unix-socket (path-literal "/private/var/run/mDNSResponder")))
)SBPL";

// Whenever any network is allowed (full or proxy-only): what name resolution and TLS need.
inline constexpr std::string_view kNetworkSupport =
    R"SBPL(; Network support: routing socket, DNS configuration and certificate trust services.
(allow system-socket (require-all (socket-domain AF_SYSTEM) (socket-protocol 2)))
(allow mach-lookup
  (global-name "com.apple.bsd.dirhelper")
  (global-name "com.apple.system.opendirectoryd.membership")
  (global-name "com.apple.SecurityServer")
  (global-name "com.apple.networkd")
  (global-name "com.apple.ocspd")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  (global-name "com.apple.SystemConfiguration.configd"))
(allow sysctl-read (sysctl-name-regex #"^net[.]routetable"))
)SBPL";

// Only when reads are unrestricted: preference reads go through cfprefsd, which reads files on
// the caller's behalf and would bypass a read restriction.
inline constexpr std::string_view kPreferences =
    R"SBPL(; User preferences (only with unrestricted reads: cfprefsd reads on the caller's behalf).
(allow ipc-posix-shm-read* (ipc-posix-name-prefix "apple.cfprefs."))
(allow mach-lookup
  (global-name "com.apple.cfprefsd.daemon")
  (global-name "com.apple.cfprefsd.agent")
  (local-name "com.apple.cfprefsd.agent"))
(allow user-preference-read)
)SBPL";

// ":minimal" with restricted reads: read-only system locations a program needs to start, link
// the system libraries and log, and what the developer-tool shims in /usr/bin (git, clang,
// make: xcrun underneath) need to find and run the selected Xcode or Command Line Tools: the
// xcode-select link, /Applications/Xcode*.app and /Library/Developer. Grants no write anywhere.
inline constexpr std::string_view kPlatformDefaults =
    R"SBPL(; Platform defaults (":minimal"): system files needed to start programs. Read-only.
(allow file-read-metadata
  (literal "/") (literal "/etc") (literal "/tmp") (literal "/var") (literal "/private")
  (literal "/private/etc") (literal "/private/tmp") (literal "/private/var")
  (literal "/System") (literal "/System/Volumes") (literal "/Library") (literal "/Users")
  (literal "/usr") (literal "/usr/local") (literal "/opt") (literal "/opt/homebrew")
  (literal "/Applications") (literal "/private/var/db"))
(allow file-read*
  (subpath "/bin") (subpath "/sbin") (subpath "/usr/bin") (subpath "/usr/sbin")
  (subpath "/usr/lib") (subpath "/usr/libexec") (subpath "/usr/share")
  (subpath "/usr/local/lib") (subpath "/opt/homebrew/lib")
  (subpath "/System/Library") (subpath "/System/Cryptexes")
  (subpath "/System/Volumes/Preboot/Cryptexes")
  (subpath "/Library/Apple/System/Library") (subpath "/Library/Preferences")
  (subpath "/private/etc") (subpath "/private/var/db/timezone")
  (subpath "/private/var/db/dyld") (literal "/private/var/db/xcode_select_link")
  (subpath "/Library/Developer") (regex #"^/Applications/Xcode[^/]*[.]app(/|$)")
  (literal "/dev/random") (literal "/dev/urandom") (literal "/dev/zero")
  (literal "/dev/autofs_nowait") (subpath "/dev/fd"))
(allow file-read* file-write-data file-ioctl
  (require-all (literal "/dev/dtracehelper") (vnode-type CHARACTER-DEVICE)))
(allow file-map-executable
  (subpath "/usr/lib") (subpath "/System/Library") (subpath "/System/Cryptexes")
  (subpath "/System/Volumes/Preboot/Cryptexes") (subpath "/Library/Apple/System/Library")
  (subpath "/Library/Developer") (regex #"^/Applications/Xcode[^/]*[.]app/"))
(allow system-mac-syscall (mac-policy-name "vnguard"))
(allow system-mac-syscall
  (require-all (mac-policy-name "Sandbox") (mac-syscall-number 67)))
(allow mach-lookup
  (global-name "com.apple.logd")
  (global-name "com.apple.logd.events")
  (global-name "com.apple.system.logger")
  (global-name "com.apple.system.notification_center")
  (global-name "com.apple.diagnosticd")
  (global-name "com.apple.trustd.agent"))
(allow network-outbound (literal "/private/var/run/syslog"))
)SBPL";

}  // namespace sbx::seatbelt::sections
