#!/usr/bin/env python3
"""Generates the bindings' report types from the report JSON Schemas (core/schema/README.md).

    gen_report_types.py [--source DIR]           rewrite the generated files
    gen_report_types.py [--source DIR] --check   exit 1 (with a diff) if they differ

Writes bindings/node/reports.d.ts (TypeScript declarations, re-exported by index.d.ts) and
bindings/python/src/sbx/reports.py (TypedDicts, re-exported by sbx.types). Both are checked in
(the npm package and the wheel are made from the source tree, without CMake), and the ctest
`schema.types` runs --check so they cannot drift from the schemas.

Python stdlib only. Understands the subset of JSON Schema the report schemas use, and refuses
anything else (so a new keyword is handled here before it is used there):
  - every object is a named $defs entry, closed (additionalProperties false); a key is optional
    when it is not in "required";
  - type (a name or a list, "null" included), enum (strings and null), const, items, $ref to a
    local $defs, anyOf/oneOf of such schemas; description, minimum, maximum, title, $id,
    minLength, $schema (annotations and bounds a type cannot express).
A $defs name is the type's name in both languages; two schemas may share a definition (Denial,
CgroupSupport, Capability) only if it is the same in both.
"""
import argparse
import difflib
import json
import keyword
import os
import sys

# The report schemas, in the order their types are written. policy.schema.json is not a report.
SCHEMAS = ["exec", "denial", "decision", "explain", "backends", "plan", "context", "cache",
           "verify"]
TS_OUT = os.path.join("bindings", "node", "reports.d.ts")
PY_OUT = os.path.join("bindings", "python", "src", "sbx", "reports.py")

ANNOTATIONS = {"description", "minimum", "maximum", "minLength", "title", "$id", "$schema"}
VALUE_KEYWORDS = {"type", "enum", "const", "items", "$ref", "anyOf", "oneOf"}
OBJECT_KEYWORDS = {"type", "additionalProperties", "required", "properties"}


class SchemaError(Exception):
    pass


def load_definitions(source):
    """{name: (schema file, definition)} over every report schema, in order."""
    definitions = {}
    roots = []
    for name in SCHEMAS:
        path = os.path.join(source, "core", "schema", name + ".schema.json")
        with open(path, encoding="utf-8") as f:
            schema = json.load(f)
        unknown = set(schema) - ANNOTATIONS - {"$ref", "$defs"}
        if unknown:
            raise SchemaError(f"{path}: unsupported top-level keywords {sorted(unknown)}")
        roots.append((name, schema["$ref"].rsplit("/", 1)[-1], schema.get("title", "")))
        for key, definition in schema["$defs"].items():
            if key in definitions and definitions[key][1] != definition:
                raise SchemaError(f"$defs/{key} differs between {definitions[key][0]} and {path}")
            definitions.setdefault(key, (path, definition))
    return definitions, roots


def is_object(schema):
    return schema.get("type") == "object"


def check_object(name, schema):
    unknown = set(schema) - OBJECT_KEYWORDS - ANNOTATIONS
    if unknown:
        raise SchemaError(f"$defs/{name}: unsupported keywords {sorted(unknown)}")
    if schema.get("additionalProperties") is not False:
        raise SchemaError(f"$defs/{name}: an object must be closed (additionalProperties false)")
    for key in schema.get("required", []):
        if key not in schema["properties"]:
            raise SchemaError(f"$defs/{name}: required key {key} has no schema")


def check_value(where, schema, definitions):
    unknown = set(schema) - VALUE_KEYWORDS - ANNOTATIONS
    if unknown:
        raise SchemaError(f"{where}: unsupported keywords {sorted(unknown)}")
    types = schema.get("type")
    if types == "object" or (isinstance(types, list) and "object" in types):
        raise SchemaError(f"{where}: an object must be a named $defs entry (use $ref)")
    if "$ref" in schema and not schema["$ref"].startswith("#/$defs/"):
        raise SchemaError(f"{where}: only local $defs references are supported")
    if "$ref" in schema and schema["$ref"][len("#/$defs/"):] not in definitions:
        raise SchemaError(f"{where}: {schema['$ref']} is not defined")


# ---- TypeScript ---------------------------------------------------------------------------

TS_TYPES = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean",
            "null": "null"}


def ts_type(where, schema, definitions):
    check_value(where, schema, definitions)
    if "$ref" in schema:
        return schema["$ref"][len("#/$defs/"):]
    if "anyOf" in schema or "oneOf" in schema:
        parts = schema.get("anyOf") or schema.get("oneOf")
        return " | ".join(ts_type(where, part, definitions) for part in parts)
    if "const" in schema:
        return "null" if schema["const"] is None else json.dumps(schema["const"]).replace('"', "'")
    if "enum" in schema:
        return " | ".join("null" if v is None else json.dumps(v).replace('"', "'")
                          for v in schema["enum"])
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    out = []
    for name in types:
        if name == "array":
            item = ts_type(where + "/items", schema["items"], definitions)
            out.append(f"Array<{item}>" if " " in item else item + "[]")
        else:
            out.append(TS_TYPES[name])
    return " | ".join(out)


def ts_comment(text, indent):
    safe = text.replace("*/", "*\\/")
    return f"{indent}/** {safe} */\n" if text else ""


def typescript(definitions, roots):
    out = ["// GENERATED by cmake/scripts/gen_report_types.py from core/schema/*.schema.json: do not",
           "// edit; change the schema and run the script (ctest schema.types checks it).",
           "// The reports libsbx returns, exactly: every key is listed, none is left out.", ""]
    out.append("// The documents and their schemas (`sbx schema NAME`, share/sbx/NAME.schema.json):")
    for file, root, title in roots:
        out.append(f"//   {root}: {file}.schema.json ({title})")
    out.append("")
    for name, (_, schema) in definitions.items():
        out.append(ts_comment(schema.get("description", ""), "").rstrip("\n"))
        if is_object(schema):
            check_object(name, schema)
            out.append(f"export interface {name} {{")
            required = set(schema.get("required", []))
            for key, value in schema["properties"].items():
                comment = ts_comment(value.get("description", ""), "  ")
                if comment:
                    out.append(comment.rstrip("\n"))
                optional = "" if key in required else "?"
                out.append(f"  {key}{optional}: {ts_type(name + '/' + key, value, definitions)};")
            out.append("}")
        else:
            out.append(f"export type {name} = {ts_type(name, schema, definitions)};")
        out.append("")
    return "\n".join(line for line in out if line is not None).replace("\n\n\n", "\n\n")


# ---- Python -------------------------------------------------------------------------------

PY_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
            "null": "None"}


def py_union(parts):
    parts = list(dict.fromkeys(parts))
    if "None" in parts and len(parts) > 1:
        rest = [p for p in parts if p != "None"]
        inner = rest[0] if len(rest) == 1 else f"Union[{', '.join(rest)}]"
        return f"Optional[{inner}]"
    return parts[0] if len(parts) == 1 else f"Union[{', '.join(parts)}]"


def py_type(where, schema, definitions):
    check_value(where, schema, definitions)
    if "$ref" in schema:
        # Quoted: a forward reference, valid in aliases too (Union["A", "B"]).
        return '"' + schema["$ref"][len("#/$defs/"):] + '"'
    if "anyOf" in schema or "oneOf" in schema:
        parts = schema.get("anyOf") or schema.get("oneOf")
        return py_union([py_type(where, part, definitions) for part in parts])
    if "const" in schema:
        const = schema["const"]
        return f"Literal[{const!r}]" if isinstance(const, bool) else f"Literal[{json.dumps(const)}]"
    if "enum" in schema:
        values = [json.dumps(v) for v in schema["enum"] if v is not None]
        literal = f"Literal[{', '.join(values)}]"
        return py_union([literal, "None"]) if None in schema["enum"] else literal
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    parts = []
    for name in types:
        if name == "array":
            parts.append(f"List[{py_type(where + '/items', schema['items'], definitions)}]")
        else:
            parts.append(PY_TYPES[name])
    return py_union(parts)


def py_comment(text, indent):
    return f"{indent}#: {text}" if text else None


def python(definitions, roots):
    out = ['"""The reports libsbx returns, as TypedDicts: GENERATED by cmake/scripts/gen_report_types.py',
           "from core/schema/*.schema.json; do not edit (change the schema and run the script; ctest",
           'schema.types checks it). Every key is listed, none is left out."""',
           "from typing import List, Optional, Union",
           "",
           "try:",
           "    from typing import Literal, TypedDict",
           "except ImportError:  # pragma: no cover",
           "    from typing_extensions import Literal, TypedDict  # type: ignore",
           "",
           "#: The schema each report follows: its type name -> `sbx schema NAME`.",
           "SCHEMAS = {"]
    for file, root, _ in roots:
        out.append(f'    "{root}": "{file}",')
    out += ["}", "", ""]
    names = []
    for name, (_, schema) in definitions.items():
        names.append(name)
        description = schema.get("description", "")
        if not is_object(schema):
            if description:
                out.append(py_comment(description, ""))
            out += [f"{name} = {py_type(name, schema, definitions)}", "", ""]
            continue
        check_object(name, schema)
        required = [k for k in schema["properties"] if k in schema.get("required", [])]
        optional = [k for k in schema["properties"] if k not in required]
        for key in schema["properties"]:
            if not key.isidentifier() or keyword.iskeyword(key):
                raise SchemaError(f"$defs/{name}: key {key!r} is not a Python identifier")

        def fields(keys):
            lines = []
            for key in keys:
                value = schema["properties"][key]
                comment = py_comment(value.get("description", ""), "    ")
                if comment:
                    lines.append(comment)
                lines.append(f"    {key}: {py_type(name + '/' + key, value, definitions)}")
            return lines or ["    pass"]

        doc = f'    """{description}"""' if description else None
        if optional:
            # Python 3.9 has no NotRequired: the optional keys go into a total=False subclass.
            out += [f"class _{name}Required(TypedDict):", *fields(required), "", ""]
            out += [f"class {name}(_{name}Required, total=False):", doc, *fields(optional), "", ""]
        else:
            out += [f"class {name}(TypedDict):", doc, *fields(required), "", ""]
    out.append("__all__ = [" + ", ".join(f'"{n}"' for n in names + ["SCHEMAS"]) + "]")
    return "\n".join(line for line in out if line is not None) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=os.path.join(os.path.dirname(__file__), "..", ".."),
                        help="the source tree (default: this script's)")
    parser.add_argument("--check", action="store_true",
                        help="compare instead of writing; exit 1 with a diff when they differ")
    args = parser.parse_args()
    source = os.path.abspath(args.source)
    try:
        definitions, roots = load_definitions(source)
        outputs = {TS_OUT: typescript(definitions, roots), PY_OUT: python(definitions, roots)}
    except SchemaError as error:
        print(f"gen_report_types: {error}", file=sys.stderr)
        return 2
    stale = []
    for relative, text in outputs.items():
        path = os.path.join(source, relative)
        current = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if current == text:
            continue
        if args.check:
            stale.append(relative)
            sys.stdout.writelines(difflib.unified_diff(
                current.splitlines(True), text.splitlines(True), relative, relative + " (fresh)"))
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"gen_report_types: wrote {relative}")
    if stale:
        print(f"gen_report_types: {', '.join(stale)} differ from the schemas; run "
              "cmake/scripts/gen_report_types.py and commit the result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
