#!/usr/bin/env python3
"""Generates sbx's man pages and bash/zsh/fish completions from the CLI's own definitions.

The input is `sbx __describe-cli --json` (every subcommand and option as CLI11 holds them), so
the pages and completions cannot drift from the parser: the build runs this script on the sbx
it has just linked (core/cli/extras.cmake) and tests/cli/extras_test.py regenerates them from the
installed sbx and compares.

    gen_cli_docs.py --sbx BUILT_SBX --version X.Y.Z --out DIR
    gen_cli_docs.py --describe DESCRIBE.json --version X.Y.Z --out DIR

Writes DIR/man1/sbx.1, DIR/man1/sbx-VERB.1 (one per top-level subcommand), DIR/bash/sbx,
DIR/zsh/_sbx and DIR/fish/sbx.fish. The output depends only on the input (no dates).
"""

import argparse
import json
import os
import subprocess
import sys


# ---- the model ----

def visible_options(app):
    """Options worth documenting: everything but the help flag, which every command has."""
    return [o for o in app["options"] if "--help" not in o["names"]]


def value_kind(option):
    """How a value is completed: ('choices', [...]), ('file',), ('dir',), ('command',), ('any',)."""
    if option["choices"]:
        return ("choices", option["choices"])
    value = option["value"]
    if value == "FILE":
        return ("file",)
    if value == "DIR":
        return ("dir",)
    if value.startswith("CMD"):
        return ("command",)
    return ("any",)


def walk(app, path=()):
    """Yields (path, app) for the app and every subcommand below it, depth first."""
    path = path + (app["name"],)
    yield path, app
    for sub in app["subcommands"]:
        yield from walk(sub, path)


# ---- man pages ----

def roff(text):
    """Escapes text for a roff line: backslashes, and a leading '.' or quote."""
    text = text.replace("\\", "\\e")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def option_label(option):
    if option["positional"]:
        label = "\\fI" + roff(option["value"] or option["name"]) + "\\fR"
        return label
    names = sorted(option["names"], key=lambda n: (not n.startswith("--"), n))
    label = ", ".join("\\fB" + roff(n).replace("-", "\\-") + "\\fR" for n in names)
    if option["takes_value"]:
        value = option["value"] or "VALUE"
        label += " \\fI" + roff(value) + "\\fR"
    return label


def option_text(option):
    text = option["description"]
    if option["choices"]:
        text += " (one of: " + ", ".join(option["choices"]) + ")"
    if option["repeatable"] and not option["positional"] and "repeatable" not in text:
        text += " (repeatable)"
    if option.get("default"):
        text += " (default: " + option["default"] + ")"
    if option["required"]:
        text += " (required)"
    return roff(text)


def man_options(options):
    out = []
    groups = []
    for option in options:
        if option["group"] not in groups:
            groups.append(option["group"])
    for group in groups:
        if len(groups) > 1:
            out.append(".PP\n" + roff(group) + ":")
        for option in options:
            if option["group"] == group:
                out.append(".TP\n" + option_label(option) + "\n" + option_text(option))
    return out


def synopsis(path, app):
    words = ["\\fB" + roff(" ".join(path)) + "\\fR"]
    if len(path) > 1:
        words = ["\\fBsbx\\fR", "[\\fIGLOBAL OPTIONS\\fR]", "\\fB" + roff(" ".join(path[1:])) + "\\fR"]
    if visible_options(app) and any(not o["positional"] for o in visible_options(app)):
        words.append("[\\fIOPTIONS\\fR]")
    if app["subcommands"]:
        words.append("\\fISUBCOMMAND\\fR")
    for option in visible_options(app):
        if option["positional"]:
            value = roff(option["value"] or option["name"])
            words.append("\\fI" + value + "\\fR" if option["required"] else "[\\fI" + value + "\\fR]")
    return " ".join(words)


def preformatted(text):
    return ".PP\n.nf\n" + roff(text) + "\n.fi"


def man_header(title, description):
    # No hyphenation and ragged right: option names and paths must stay whole and greppable.
    return [f'.TH {title} 1 "" "sbx {VERSION}" "User Commands"', ".nh", ".ad l", ".SH NAME",
            roff(title.lower()) + " \\- " + roff(description)]


def man_root(app):
    lines = man_header("SBX", app["description"].split(": ", 1)[-1])
    lines += [".SH SYNOPSIS", synopsis(("sbx",), app), ".SH DESCRIPTION",
              roff(app["description"]) + ".",
              ".SH GLOBAL OPTIONS", "Given before the subcommand."]
    lines += man_options(visible_options(app))
    lines.append(".SH COMMANDS")
    for sub in app["subcommands"]:
        lines.append(".TP\n\\fBsbx " + roff(sub["name"]) + "\\fR\n" + roff(sub["description"]) +
                     "; see \\fBsbx\\-" + roff(sub["name"]) + "\\fR(1).")
    if app["footer"]:
        lines += [".SH EXAMPLES", preformatted(app["footer"])]
    lines += [".SH SEE ALSO", ", ".join("\\fBsbx\\-" + roff(s["name"]) + "\\fR(1)"
                                        for s in app["subcommands"])]
    return "\n".join(lines) + "\n"


def man_section(path, app, level, parent_footer=""):
    """The description, options, subcommands and examples of one command. CLI11 gives a
    subcommand without a footer of its own its parent's, which is not repeated here."""
    lines = []
    heading = ".SH" if level == 0 else ".SS"
    if level > 0:
        lines += [".SS " + roff(" ".join(path)), synopsis(path, app), ".PP", roff(app["description"]) + "."]
    else:
        lines += [".SH SYNOPSIS", synopsis(path, app), ".SH DESCRIPTION", roff(app["description"]) + "."]
    options = visible_options(app)
    if options:
        lines.append(".PP\nOptions:" if level > 0 else heading + " OPTIONS")
        lines += man_options(options)
    if app["footer"] and app["footer"] != parent_footer:
        lines.append(".PP\nExamples:" if level > 0 else heading + " EXAMPLES")
        text = app["footer"]
        if text.startswith("Example:\n") or text.startswith("Examples:\n"):
            text = text.split("\n", 1)[1]
        lines.append(preformatted(text))
    if app["subcommands"]:
        if level == 0:
            lines.append(".SH SUBCOMMANDS")
        for sub in app["subcommands"]:
            lines += man_section(path + (sub["name"],), sub, level + 1, app["footer"])
    return lines


def man_verb(app, root_footer):
    title = "SBX-" + app["name"].upper()
    lines = man_header(title, app["description"])
    lines += man_section(("sbx", app["name"]), app, 0, root_footer)
    lines += [".SH SEE ALSO", "\\fBsbx\\fR(1)"]
    return "\n".join(lines) + "\n"


# ---- completions ----

def shell_word(text):
    """Single-quoted for bash and zsh."""
    return "'" + text.replace("'", "'\\''") + "'"


def completion_tables(root):
    """For each command path: subcommands, option names, and the value kind of each option."""
    tables = []
    for path, app in walk(root):
        key = " ".join(path)
        subs = [s["name"] for s in app["subcommands"]]
        options = [o for o in app["options"] if not o["positional"]]
        names = sorted(n for o in options for n in o["names"])
        valued = {}
        for option in options:
            if option["takes_value"]:
                for name in option["names"]:
                    valued[name] = value_kind(option)
        positional = [value_kind(o) for o in app["options"] if o["positional"]]
        tables.append((key, app, subs, names, valued, positional))
    return tables


def kind_word(kind):
    return kind[0] if kind[0] != "choices" else "choices:" + " ".join(kind[1])


def bash_completion(root):
    lines = ["# bash completion for sbx (generated by gen_cli_docs.py from `sbx __describe-cli`)",
             "declare -A _sbx_subs=() _sbx_opts=() _sbx_values=() _sbx_args=()"]
    for key, _, subs, names, valued, positional in completion_tables(root):
        lines.append(f"_sbx_subs[{shell_word(key)}]={shell_word(' '.join(subs))}")
        lines.append(f"_sbx_opts[{shell_word(key)}]={shell_word(' '.join(names))}")
        for name, kind in sorted(valued.items()):
            lines.append(f"_sbx_values[{shell_word(key + ' ' + name)}]={shell_word(kind_word(kind))}")
        if positional:
            lines.append(f"_sbx_args[{shell_word(key)}]={shell_word(kind_word(positional[0]))}")
    lines.append(r'''
_sbx_complete_kind() {
  local kind=$1 cur=$2
  case $kind in
    choices:*) COMPREPLY=($(compgen -W "${kind#choices:}" -- "$cur")) ;;
    file) COMPREPLY=($(compgen -f -- "$cur")) ;;
    dir) COMPREPLY=($(compgen -d -- "$cur")) ;;
    command) COMPREPLY=($(compgen -c -- "$cur")) ;;
    *) COMPREPLY=() ;;
  esac
}

_sbx() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmdpath=sbx i word
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ $word == -- ]]; then
      COMPREPLY=($(compgen -c -- "$cur")); return
    elif [[ $word == -* ]]; then
      [[ -n ${_sbx_values["$cmdpath $word"]+x} && $word != *=* ]] && ((i++))
    elif [[ " ${_sbx_subs[$cmdpath]} " == *" $word "* ]]; then
      cmdpath="$cmdpath $word"
    fi
  done
  local prev=${COMP_WORDS[COMP_CWORD-1]}
  if ((COMP_CWORD > 1)) && [[ -n ${_sbx_values["$cmdpath $prev"]+x} ]]; then
    _sbx_complete_kind "${_sbx_values["$cmdpath $prev"]}" "$cur"; return
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "${_sbx_opts[$cmdpath]}" -- "$cur")); return
  fi
  if [[ -n ${_sbx_subs[$cmdpath]} ]]; then
    COMPREPLY=($(compgen -W "${_sbx_subs[$cmdpath]}" -- "$cur")); return
  fi
  _sbx_complete_kind "${_sbx_args[$cmdpath]:-}" "$cur"
}
complete -F _sbx sbx''')
    return "\n".join(lines) + "\n"


def zsh_completion(root):
    lines = ["#compdef sbx", "# zsh completion for sbx (generated by gen_cli_docs.py from "
             "`sbx __describe-cli`)", "",
             "typeset -gA _sbx_subs _sbx_opts _sbx_values _sbx_args"]
    for key, app, subs, names, valued, positional in completion_tables(root):
        described = [s["name"] + ":" + s["description"].replace(":", "\\:") for s in app["subcommands"]]
        lines.append(f"_sbx_subs+=({shell_word(key)} {shell_word(chr(10).join(described))})")
        lines.append(f"_sbx_opts+=({shell_word(key)} {shell_word(' '.join(names))})")
        for name, kind in sorted(valued.items()):
            lines.append(f"_sbx_values+=({shell_word(key + ' ' + name)} {shell_word(kind_word(kind))})")
        if positional:
            lines.append(f"_sbx_args+=({shell_word(key)} {shell_word(kind_word(positional[0]))})")
    lines.append(r'''
_sbx_kind() {
  case $1 in
    choices:*) compadd -- ${=${1#choices:}} ;;
    file) _files ;;
    dir) _files -/ ;;
    command) _command_names -e ;;
  esac
}

_sbx() {
  local cmdpath=sbx i word
  for ((i = 2; i < CURRENT; i++)); do
    word=${words[i]}
    if [[ $word == -- ]]; then
      _command_names -e; return
    elif [[ $word == -* ]]; then
      (( ${+_sbx_values[$cmdpath $word]} )) && ((i++))
    elif (( ${${(f)_sbx_subs[$cmdpath]}[(I)$word:*]} )); then
      cmdpath="$cmdpath $word"
    fi
  done
  local prev=${words[CURRENT-1]}
  if (( CURRENT > 2 && ${+_sbx_values[$cmdpath $prev]} )); then
    _sbx_kind ${_sbx_values[$cmdpath $prev]}; return
  fi
  if [[ ${words[CURRENT]} == -* ]]; then
    compadd -- ${=_sbx_opts[$cmdpath]}; return
  fi
  if [[ -n ${_sbx_subs[$cmdpath]} ]]; then
    local -a subs; subs=(${(f)_sbx_subs[$cmdpath]})
    _describe -t commands 'sbx command' subs; return
  fi
  _sbx_kind ${_sbx_args[$cmdpath]}
}

_sbx "$@"''')
    return "\n".join(lines) + "\n"


def fish_quote(text):
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_completion(root):
    lines = ["# fish completion for sbx (generated by gen_cli_docs.py from `sbx __describe-cli`)",
             "complete -c sbx -f"]
    for path, app in walk(root):
        chain = path[1:]
        seen = "".join(f"; and __fish_seen_subcommand_from {w}" for w in chain)
        below = [s["name"] for s in app["subcommands"]]
        here = "true" + seen
        if below:
            condition = here + "; and not __fish_seen_subcommand_from " + " ".join(below)
            for sub in app["subcommands"]:
                lines.append(f"complete -c sbx -n {fish_quote(condition)} -a {fish_quote(sub['name'])}"
                             f" -d {fish_quote(sub['description'][:80])}")
        if below:
            here = here + "; and not __fish_seen_subcommand_from " + " ".join(below)
        for option in app["options"]:
            if option["positional"]:
                kind = value_kind(option)
                extra = {"file": " -F", "dir": " -a '(__fish_complete_directories)'",
                         "command": " -a '(__fish_complete_command)'"}.get(kind[0], "")
                if kind[0] == "choices":
                    extra = " -a " + fish_quote(" ".join(kind[1]))
                if extra:
                    lines.append(f"complete -c sbx -n {fish_quote(here)}{extra}")
                continue
            flags = ""
            for name in option["names"]:
                flags += (" -l " if name.startswith("--") else " -s ") + name.lstrip("-")
            if option["takes_value"]:
                kind = value_kind(option)
                if kind[0] == "choices":
                    flags += " -x -a " + fish_quote(" ".join(kind[1]))
                elif kind[0] == "file":
                    flags += " -r -F"
                elif kind[0] == "dir":
                    flags += " -x -a '(__fish_complete_directories)'"
                else:
                    flags += " -x"
            lines.append(f"complete -c sbx -n {fish_quote(here)}{flags}"
                         f" -d {fish_quote(option['description'][:80])}")
    return "\n".join(lines) + "\n"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    global VERSION
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--sbx", help="the sbx executable to describe")
    source.add_argument("--describe", help="a saved `sbx __describe-cli --json`")
    parser.add_argument("--version", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    VERSION = args.version
    if args.sbx:
        text = subprocess.run([args.sbx, "__describe-cli", "--json"], check=True,
                              capture_output=True, text=True).stdout
    else:
        with open(args.describe, encoding="utf-8") as f:
            text = f.read()
    root = json.loads(text)
    write(os.path.join(args.out, "man1", "sbx.1"), man_root(root))
    for verb in root["subcommands"]:
        write(os.path.join(args.out, "man1", f"sbx-{verb['name']}.1"), man_verb(verb, root["footer"]))
    write(os.path.join(args.out, "bash", "sbx"), bash_completion(root))
    write(os.path.join(args.out, "zsh", "_sbx"), zsh_completion(root))
    write(os.path.join(args.out, "fish", "sbx.fish"), fish_completion(root))
    return 0


VERSION = ""

if __name__ == "__main__":
    sys.exit(main())
