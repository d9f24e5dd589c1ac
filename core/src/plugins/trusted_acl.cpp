#include "plugins/trusted_acl.hpp"

#include <array>
#include <utility>

#include "sbx/core/win_path.hpp"

namespace sbx::plugins::acl {

bool Trustees::trusts(std::string_view sid) const {
  if (sid == kSystemSid || sid == kAdministratorsSid || sid == kTrustedInstallerSid) return true;
  return installing_owner.has_value() && !installing_owner->empty() && sid == *installing_owner;
}

std::string rights_text(std::uint32_t mask) {
  static constexpr std::array<std::pair<std::uint32_t, std::string_view>, 10> kNames = {{
      {kFileWriteData, "FILE_WRITE_DATA/ADD_FILE"},
      {kFileAppendData, "FILE_APPEND_DATA/ADD_SUBDIRECTORY"},
      {kFileWriteEa, "FILE_WRITE_EA"},
      {kFileDeleteChild, "FILE_DELETE_CHILD"},
      {kDelete, "DELETE"},
      {kWriteDac, "WRITE_DAC"},
      {kWriteOwner, "WRITE_OWNER"},
      {kMaximumAllowed, "MAXIMUM_ALLOWED"},
      {kGenericAll, "GENERIC_ALL"},
      {kGenericWrite, "GENERIC_WRITE"},
  }};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if ((mask & bit) == 0) continue;
    if (!out.empty()) out += '|';
    out += name;
  }
  return out;
}

std::optional<std::string> check_object(const SecurityModel& model, const std::string& what,
                                        const Trustees& trustees, Place place) {
  if (model.owner_sid.empty()) return what + ": its owner cannot be read, so it cannot be trusted";
  // The owner may always rewrite the DACL (implicit WRITE_DAC), so it must be trusted itself.
  if (!trustees.trusts(model.owner_sid))
    return what + " is owned by " + model.owner_sid +
           ", not by SYSTEM, Administrators, TrustedInstaller or the owner of sbx";
  if (!model.dacl_present) return what + " has a NULL DACL: everyone may change it";
  const std::uint32_t tolerated = place == Place::kAboveTrustRoot ? kCreateEntryRights : 0;
  for (const Ace& ace : model.dacl) {
    if (ace.inherit_only) continue;  // not effective on this object
    if (ace.type == AceType::kDeny) continue;
    if (ace.type == AceType::kOther)
      return what + " has an access entry of a kind sbx does not judge (for " + ace.sid +
             "), so it cannot be trusted";
    if (trustees.trusts(ace.sid)) continue;
    const std::uint32_t rights = ace.mask & kWriteRights & ~tolerated;
    if (rights != 0)
      return what + " can be changed by " + ace.sid + " (" + rights_text(rights) +
             "): only SYSTEM, Administrators, TrustedInstaller and the owner of sbx may";
  }
  return std::nullopt;
}

std::optional<std::string> check_chain(const std::vector<ChainEntry>& chain,
                                       std::size_t trust_root_index, const Trustees& trustees) {
  if (chain.empty()) return std::string("no directory chain to check");
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const Place place = i < trust_root_index ? Place::kAboveTrustRoot : Place::kTrustRootOrBelow;
    if (std::optional<std::string> bad =
            check_object(chain[i].model, chain[i].path, trustees, place))
      return bad;
  }
  return std::nullopt;
}

std::optional<std::string> final_path_as_generic(std::string_view final_path) {
  std::string_view rest = final_path;
  for (std::string_view prefix : {std::string_view("\\\\?\\"), std::string_view("//?/")}) {
    if (rest.substr(0, prefix.size()) == prefix) {
      rest.remove_prefix(prefix.size());
      break;
    }
  }
  Result<std::string> generic = policy::winpath::normalize(rest);
  if (!generic.ok()) return std::nullopt;
  return *generic;
}

std::optional<std::string> loaded_module_problem(const FileIdentity& checked,
                                                 const FileIdentity& loaded) {
  const std::optional<std::string> want = final_path_as_generic(checked.final_path);
  const std::optional<std::string> got = final_path_as_generic(loaded.final_path);
  if (!want || !got)
    return "the module's final path (" + loaded.final_path + ", checked " + checked.final_path +
           ") is not a drive path";
  if (!policy::winpath::equal(*want, *got))
    return "the module loaded is " + *got + ", not the checked " + *want;
  if (checked.file_id.empty() || loaded.volume != checked.volume ||
      loaded.file_id != checked.file_id)
    return "the module's file (volume and file id) is not the file that was checked: it was "
           "replaced between the check and the load";
  return std::nullopt;
}

}  // namespace sbx::plugins::acl
