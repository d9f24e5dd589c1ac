// Profile generator on arbitrary policies: never crashes; every plan it accepts has a profile
// text the strict S-expression reader parses, and sandbox-exec argv framing intact.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "sbx/seatbelt/profile.hpp"
#include "sexpr.hpp"

namespace {

std::string fuzz_path(FuzzedDataProvider& fdp) {
  std::string p = fdp.ConsumeRandomLengthString(64);
  if (fdp.ConsumeBool()) p.insert(p.begin(), '/');
  return p;
}

sbx::ResolvedPolicy fuzz_policy(FuzzedDataProvider& fdp) {
  sbx::ResolvedPolicy p;
  p.filesystem_kind = static_cast<sbx::FilesystemKind>(fdp.ConsumeIntegralInRange<int>(0, 2));
  for (int n = fdp.ConsumeIntegralInRange<int>(0, 8); n > 0; --n)
    p.rules.push_back(
        {fuzz_path(fdp), static_cast<sbx::Access>(fdp.ConsumeIntegralInRange<int>(0, 2))});
  p.platform_defaults_readable = fdp.ConsumeBool();
  for (int n = fdp.ConsumeIntegralInRange<int>(0, 4); n > 0; --n)
    p.protected_paths.push_back(
        {fuzz_path(fdp), fuzz_path(fdp), fdp.ConsumeBool(), fdp.ConsumeBool()});
  for (int n = fdp.ConsumeIntegralInRange<int>(0, 3); n > 0; --n)
    p.deny_globs.push_back(fuzz_path(fdp));
  p.network.mode = static_cast<sbx::NetworkMode>(fdp.ConsumeIntegralInRange<int>(0, 2));
  for (int n = fdp.ConsumeIntegralInRange<int>(0, 2); n > 0; --n)
    p.network.proxy_ports.push_back(fdp.ConsumeIntegral<std::uint16_t>());
  for (int n = fdp.ConsumeIntegralInRange<int>(0, 2); n > 0; --n)
    p.network.unix_sockets.push_back(fuzz_path(fdp));
  p.network.allow_local_binding = fdp.ConsumeBool();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider fdp(data, size);
  sbx::TransformRequest req;
  req.policy = fuzz_policy(fdp);
  for (int n = fdp.ConsumeIntegralInRange<int>(0, 3); n > 0; --n)
    req.env.push_back(fdp.ConsumeRandomLengthString(64));
  req.argv = {"/bin/sh", fdp.ConsumeRandomLengthString(16)};
  req.cwd = "/w";
  sbx::seatbelt::MacHostFacts host;
  if (fdp.ConsumeBool()) host.darwin_user_cache_dir = fdp.ConsumeRandomLengthString(64);
  auto plan = sbx::seatbelt::build_exec_plan(req, host);
  if (!plan.ok()) return 0;
  if (plan->argv.size() < 5 || plan->argv[0] != "/usr/bin/sandbox-exec" || plan->argv[1] != "-p")
    std::abort();
  // The profile text is printable ASCII and newlines only, whatever the paths hold.
  for (char ch : plan->argv[2])
    if (ch != '\n' &&
        (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7F))
      std::abort();
  std::vector<sbx::seatbelt::testing::Node> forms;
  sbx::seatbelt::testing::SexprReader reader(plan->argv[2]);
  if (!reader.read_all(forms)) std::abort();
  return 0;
}
