/**
 * `deno task bundle [OUT]`: writes the program as one JavaScript file (default
 * dist/edgenode.js) with `deno bundle`, and writes into it the git commit this checkout is at,
 * which `edgenode version` then reports wherever the file runs (src/cli/version_command.ts
 * BUILT_FROM). Outside a git checkout the bundle says "unknown".
 *
 * @module
 */
import { BUILT_FROM, checkoutCommit } from "../src/cli/version_command.ts";

const root = new URL("../", import.meta.url).pathname;
const output = Deno.args[0] ?? "dist/edgenode.js";
const bundled = await new Deno.Command(Deno.execPath(), {
  args: [
    "bundle",
    // Deno's npm cache, not the developers' node_modules (deno.json: nodeModulesDir manual).
    "--node-modules-dir=none",
    "--platform=deno",
    "-o",
    output,
    "src/executable.ts",
  ],
  cwd: root,
}).output();
if (!bundled.success) Deno.exit(bundled.code || 1);

const commit = checkoutCommit(root);
if (commit) {
  const path = output.startsWith("/") ? output : `${root}${output}`;
  const text = await Deno.readTextFile(path);
  const placeholder = JSON.stringify(BUILT_FROM);
  if (!text.includes(placeholder)) {
    console.error(`bundle: ${placeholder} is not in ${output}; its version says no commit`);
    Deno.exit(1);
  }
  await Deno.writeTextFile(path, text.replace(placeholder, JSON.stringify(commit)));
}
