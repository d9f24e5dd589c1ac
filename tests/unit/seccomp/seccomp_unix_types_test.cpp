// Unix socket types (issue #32, point 2): without bwrap's unix-socket supervisor (Landlock's
// kBlocked and kProxy, and kPrivate), socketpair() makes only AF_UNIX stream and seqpacket pairs,
// an allow-list: SOCK_DGRAM and SOCK_RAW (net/unix/af_unix.c unix_create() maps it to
// SOCK_DGRAM) are refused with and without SOCK_NONBLOCK/SOCK_CLOEXEC, as is every other type.
// Both the filter libseccomp builds at run time and the precompiled one are run.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <string>

#include "filtered_child.hpp"
#include "seccomp_programs.hpp"

namespace {

using sbx::stage2::NetworkFilter;
using sbx_seccomp_test::raw;
using sbx_seccomp_test::run_filtered;
using sbx_seccomp_test::run_in_filtered_child;

long pair_with_type(long family, long type) {
  int sv[2];
  const long rc = raw(SYS_socketpair, family, type, 0, reinterpret_cast<long>(sv));
  if (rc == 0) {
    ::close(sv[0]);
    ::close(sv[1]);
  }
  return rc;
}

std::string run_precompiled_program(NetworkFilter net, const std::function<long()>& probe,
                                    int expected) {
  return run_in_filtered_child([net] { return sbx::stage2::load_precompiled_filter_raw(net) == 0; },
                               probe, expected);
}

TEST(SeccompUnixTypes, OnlyStreamAndSeqpacketPairsWithoutTheSupervisor) {
  for (const NetworkFilter net :
       {NetworkFilter::kBlocked, NetworkFilter::kProxy, NetworkFilter::kPrivate}) {
    for (const long flags :
         {0L, long{SOCK_NONBLOCK}, long{SOCK_CLOEXEC}, long{SOCK_NONBLOCK | SOCK_CLOEXEC}}) {
      for (long type = 0; type <= 0xf; ++type) {
        const bool allowed = type == SOCK_STREAM || type == SOCK_SEQPACKET;
        // Types the kernel does not make for AF_UNIX answer EPERM too (the filter runs first).
        const int expected = allowed ? 0 : EPERM;
        const auto probe = [type, flags] { return pair_with_type(AF_UNIX, type | flags); };
        EXPECT_EQ(run_filtered(net, probe, expected), "ok")
            << "net " << static_cast<int>(net) << " type " << type << " flags " << flags;
        EXPECT_EQ(run_precompiled_program(net, probe, expected), "ok")
            << "precompiled, net " << static_cast<int>(net) << " type " << type;
      }
    }
    // A family with upper bits set (the kernel reads the int: AF_UNIX) is refused too.
    EXPECT_EQ(run_filtered(
                  net, [] { return pair_with_type((1L << 32) | AF_UNIX, SOCK_STREAM); }, EPERM),
              "ok");
  }
}

// The open network mode (bwrap only: its supervisor's filter takes unix datagram sockets): a
// family with upper bits set, which the kernel reads as its low 32 bits, is refused whole, so
// AF_VSOCK cannot pass the EQ comparison that refuses it that way.
TEST(SeccompUnixTypes, OpenModeRefusesFamiliesWithUpperBits) {
  EXPECT_EQ(
      run_filtered(
          NetworkFilter::kOpen,
          [] { return raw(SYS_socket, (1L << 32) | 40 /* AF_VSOCK */, SOCK_STREAM, 0); }, EPERM),
      "ok");
  EXPECT_EQ(run_precompiled_program(
                NetworkFilter::kOpen,
                [] { return pair_with_type((1L << 32) | AF_UNIX, SOCK_STREAM); }, EPERM),
            "ok");
  EXPECT_EQ(run_filtered(
                NetworkFilter::kOpen, [] { return pair_with_type(AF_UNIX, SOCK_STREAM); }, 0),
            "ok");
}

}  // namespace
