// The programs an excluded command may run without a sandbox, and the arguments each may take
// (issue #32). Four reviews broke every denylist of "programs that run other programs" (another
// name of an editor, ld.so, `sort --compress-program`, `split --filter`, `git ls-remote
// --upload-pack`, ...): no such list can be complete. So it is an allowlist, like Codex's
// is_known_safe_command (codex-rs command_safety/is_safe_command.rs) and stricter where that one
// misses a form (option clusters, abbreviated long options, a program reached by another name):
// a program sbx knows, whose arguments it checks to run nothing but itself and write no file.
// Anything else runs sandboxed, with the reason. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::settings {

// Why the simple command `words` (a program, by name or path, and its arguments) is not one sbx
// may run without a sandbox, or nullopt when it is: the program (by its last path component) is
// in the table below and each argument is one its grammar accepts. A shell is refused here:
// sbx reads a shell's script only as the whole command `SHELL -c SCRIPT` (programs_of).
std::optional<std::string> unknown_grammar(const std::vector<std::string>& words);

// True when `file_name`, the last component of the symlink-free path the program `name` resolved
// to, is a file that program may be: `ls` must be a file named ls, not `vim.basic` reached
// through a link named ls or `editor`; `sh` may be dash or bash.
bool is_file_of(std::string_view name, std::string_view file_name);

// The names of the programs in the table, sorted, for messages and documents.
std::vector<std::string> known_program_names();

}  // namespace sbx::settings
