#!/usr/bin/env bash
# Fails when an installed ELF file of an sbx install carries debug information.
#
#   cmake/scripts/check_no_debug_info.sh PATH...
#
# Release installs carry none (the `release` preset builds without -g): debug information
# costs start-up page-ins and disk (libsbx with it was ~28 MB). Checks each ELF file among the
# PATHs (a directory: every file under it; demo.sh passes the install manifest, so files of
# other software in a shared prefix are not judged) for a .debug_info or compressed
# .zdebug_info section; prints each offender.
set -euo pipefail
[[ $# -gt 0 ]] || { echo "usage: check_no_debug_info.sh PATH..." >&2; exit 2; }
checked=0
bad=0
while IFS= read -r -d '' file; do
  [[ "$(head -c 4 "$file" | od -An -c | tr -d ' ')" == '177ELF' ]] || continue
  checked=$((checked + 1))
  if readelf -S --wide "$file" | grep -Eq ' \.z?debug_info '; then
    echo "debug information in $file" >&2
    bad=$((bad + 1))
  fi
done < <(find "$@" -type f -print0)
if [[ $checked -eq 0 ]]; then
  echo "no ELF file among $*: nothing was checked" >&2
  exit 2
fi
[[ $bad -eq 0 ]] || { echo "$bad of $checked installed ELF files carry debug information" >&2; exit 1; }
echo "no debug information in the $checked installed ELF files"
