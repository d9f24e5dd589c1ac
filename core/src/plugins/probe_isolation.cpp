// guarded_probe (manager.hpp): each backend's probe() runs in a forked child with a deadline.
//
// Why a child: probe() is plugin code that runs on every `sbx exec`, before anything is
// sandboxed. A plugin that crashes there (a bad pointer, an abort) would take sbx down with it,
// and one that hangs would hang sbx forever; either way no other backend would get its turn.
// In a child, a signal or a missed deadline only marks that backend unavailable, with the reason.
//
// The child (isolated_child.hpp, shared with the isolated transform and exec of third-party
// plugins) does the least it can: probe, serialise the report, write it to a pipe, _exit (no
// atexit handlers, no flushing of buffers inherited from sbx). The parent reads until end of
// file, bounded in time and size, reaps the child and rebuilds the report. The wire format
// carries every byte of every string and every capability bit, so a probe that answers gives
// exactly the report it would have given in process.
//
// Known limits: in-memory state a probe sets in its backend object stays in the child (backends
// that keep such state must also be able to recompute it in transform()); fork() in a process
// with other threads (an embedder's) gives a child with only this thread, so a probe that takes
// a lock another thread held at that moment waits until the deadline; descendants a probe
// started itself are not killed with it. On Windows the probe runs in process, guarded against
// exceptions only.
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "probe_wire.hpp"
#include "sbx/core/exit_codes.hpp"
#include "sbx/core/manager.hpp"

#ifndef _WIN32
#include <sys/wait.h>

#include "plugins/isolated_child.hpp"
#endif

namespace sbx {

namespace json = boost::json;

// The wire format (probe_wire.hpp), also that of the kept answers (probe_store.cpp):
// Boost.JSON copies bytes that are not valid UTF-8 through unchanged and the reader is told to
// accept them, so strings arrive exactly as sent (unlike report_json.hpp, which makes text
// valid for people and other programs); capabilities travel as their bits, unknown ones
// included.
std::string probe_to_wire(const ProbeReport& report) {
  json::array checks;
  for (const ProbeCheck& check : report.checks) {
    checks.emplace_back(json::array{json::string(check.name), static_cast<int>(check.status),
                                    json::string(check.observed), json::string(check.remedy)});
  }
  json::object out;
  out["available"] = report.available;
  out["summary"] = json::string(report.summary);
  out["checks"] = std::move(checks);
  out["capabilities"] = report.capabilities.bits();
  return json::serialize(out);
}

Result<ProbeReport> probe_from_wire(std::string_view text) {
  try {
    json::parse_options options;
    options.allow_invalid_utf8 = true;
    const json::value value = json::parse(text, {}, options);
    const json::object& in = value.as_object();
    ProbeReport report;
    report.available = in.at("available").as_bool();
    report.summary = std::string(in.at("summary").as_string());
    for (const json::value& item : in.at("checks").as_array()) {
      const json::array& check = item.as_array();
      if (check.size() != 4) return Error{"a check is malformed"};
      const std::int64_t status = check.at(1).as_int64();
      if (status < 0 || status > static_cast<int>(CheckStatus::kFail))
        return Error{"a check has an unknown status"};
      report.checks.push_back(
          {std::string(check.at(0).as_string()), static_cast<CheckStatus>(status),
           std::string(check.at(2).as_string()), std::string(check.at(3).as_string())});
    }
    const std::uint64_t bits = in.at("capabilities").to_number<std::uint64_t>();
    for (std::uint32_t bit = 0; bit < 32; ++bit) {
      if ((bits >> bit) & 1u) report.capabilities.add(static_cast<Capability>(1u << bit));
    }
    return report;
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
}

namespace {

ProbeReport unavailable(std::string summary) {
  ProbeReport report;
  report.summary = std::move(summary);
  return report;
}

// probe() in this process; an exception becomes an unavailable report naming it.
ProbeReport probe_in_process(Backend& backend) {
  try {
    return backend.probe(ProbeContext{});
  } catch (const std::exception& e) {
    return unavailable(std::string("probe failed with an exception: ") + e.what());
  } catch (...) {
    return unavailable("probe failed with an unknown exception");
  }
}

#ifndef _WIN32

// A report that large is not a report (the real ones are a few kilobytes).
constexpr std::size_t kMaxReportBytes = 4u << 20;

ProbeReport probe_in_child(Backend& backend, std::chrono::milliseconds limit) {
  namespace isolated = plugins::isolated;
  const isolated::Answer answer = isolated::answer_from_child(
      [&backend] { return probe_to_wire(probe_in_process(backend)); }, limit, kMaxReportBytes);
  if (!answer.setup_error.empty())
    return unavailable("probe could not be isolated: " + answer.setup_error);
  const std::optional<int>& status = answer.status;
  if (answer.too_large)
    return unavailable("probe answered with more than " + std::to_string(kMaxReportBytes >> 20) +
                       " MiB");
  if (answer.timed_out)
    return unavailable("probe did not answer within " + isolated::duration_text(limit));
  if (status && WIFSIGNALED(*status))
    return unavailable("probe crashed with " + isolated::signal_name(WTERMSIG(*status)));
  if (status && WIFEXITED(*status) && WEXITSTATUS(*status) != 0)
    return unavailable("probe exited with status " + std::to_string(WEXITSTATUS(*status)) +
                       " before it answered");
  if (answer.data.empty()) return unavailable("probe ended without an answer");
  Result<ProbeReport> report = probe_from_wire(answer.data);
  if (!report.ok()) return unavailable("probe sent an unreadable answer: " + report.error());
  return std::move(*report);
}

#endif  // _WIN32

}  // namespace

ProbeReport guarded_probe(Backend& backend, std::chrono::milliseconds deadline) {
#ifdef _WIN32
  (void)deadline;
  return probe_in_process(backend);
#else
  return probe_in_child(backend, deadline);
#endif
}

}  // namespace sbx
