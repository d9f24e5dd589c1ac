'use strict';
// ctest node.abi: the Node binding's declarations of sbx/sbx.h (lib/ffi.js of the installed
// package) against the C compiler's view of the header (node_abi.c's JSON): each member the
// binding declares sits at the header's offset with the header's size, sbx_stdio (an array
// element) has the header's size, and the constants and error kinds have the header's values.
// sbx_run_options is versioned by size: a binding that declares fewer members than a newer
// header is valid (libsbx reads a member only when struct_size covers it), so that is a note.
// usage: node node_abi.js ABI_EXECUTABLE PACKAGE_DIR
const assert = require('node:assert');
const childProcess = require('node:child_process');
const path = require('node:path');

const [abiExecutable, packageDir] = process.argv.slice(2);
const header = JSON.parse(childProcess.execFileSync(abiExecutable, { encoding: 'utf8' }));
const ffi = require(path.join(packageDir, 'lib', 'ffi.js'));
const { kindName } = require(path.join(packageDir, 'lib', 'errors.js'));
const { koffi } = ffi;

for (const [name, c] of Object.entries({ sbx_stdio: header.sbx_stdio,
                                          sbx_run_options: header.sbx_run_options })) {
  const type = ffi.types[name];
  for (const member of Object.keys(type.members)) {
    assert.ok(member in c.members, `${name}.${member}: the binding declares it, the header does not`);
    const declared = { offset: koffi.offsetof(type, member), size: koffi.sizeof(type.members[member].type) };
    assert.deepStrictEqual(declared, c.members[member], `${name}.${member}`);
  }
  const size = koffi.sizeof(type);
  if (name === 'sbx_stdio') assert.strictEqual(size, c.size, 'sizeof(sbx_stdio)');
  assert.ok(size <= c.size, `sizeof(${name}): the binding's ${size} > the header's ${c.size}`);
  if (size < c.size) {
    console.log(`note: ${name} has members after the binding's ${Object.keys(type.members).length} ` +
                `(${size} of ${c.size} bytes): lib/ffi.js may declare them`);
  }
  console.log(`${name}: ${Object.keys(type.members).length} members as in the header, ${size} bytes`);
}
assert.deepStrictEqual({ ...ffi.constants }, header.constants);
assert.deepStrictEqual(header.error_kinds.map((e) => `${e.split(' ')[0]} ${kindName(Number(e.split(' ')[0]))}`),
                       header.error_kinds);
console.log('node.abi: the constants and the error kinds are the header\'s');
