/**
 * `deno task compile [--target NAME]... [--all]`: builds the single executable, `dist/edgenode-NAME`,
 * with `deno compile` from the bundle of src/executable.ts (dist/edgenode.js, as `deno task bundle`
 * writes it, carrying the commit) and its permissions (src/program/executable_flags.ts) baked in.
 * Without a target it builds for this machine; `--all` builds every target below.
 *
 * `deno compile` downloads its runtime base (denort) for each target the first time. Where that
 * is not possible, DENORT_BIN may name a local denort of the same Deno version; it serves the
 * one target it was built for.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { EXECUTABLE_FLAGS } from "../src/program/executable_flags.ts";

/** The targets edgenode ships for, by short name. */
const TARGETS: Record<string, string> = {
  "linux-x86_64": "x86_64-unknown-linux-gnu",
  "linux-aarch64": "aarch64-unknown-linux-gnu",
  "macos-x86_64": "x86_64-apple-darwin",
  "macos-aarch64": "aarch64-apple-darwin",
  "windows-x86_64": "x86_64-pc-windows-msvc",
};

function hostTarget(): string {
  const os = { linux: "linux", darwin: "macos", windows: "windows" }[Deno.build.os as string];
  const name = `${os}-${Deno.build.arch}`;
  if (!TARGETS[name]) throw new Error(`no edgenode target for this machine (${name})`);
  return name;
}

const { values } = parseArgs({
  args: Deno.args,
  options: { target: { type: "string", multiple: true }, all: { type: "boolean" } },
  strict: true,
});
const names = values.all ? Object.keys(TARGETS) : values.target ?? [hostTarget()];
const root = new URL("../", import.meta.url).pathname;
// The executables embed the bundle `deno task bundle` writes, stamped with this checkout's commit
// (scripts/bundle.ts), the one file CI runs (tests/bundle_test.ts): their `version` says it.
const BUNDLE = "dist/edgenode.js";
const bundled = await new Deno.Command(Deno.execPath(), {
  args: ["run", "--no-prompt", "--allow-read", "--allow-write", "--allow-run", "--allow-env"]
    .concat(["scripts/bundle.ts", BUNDLE]),
  cwd: root,
}).output();
if (!bundled.success) Deno.exit(bundled.code || 1);
let failed = 0;
for (const name of names) {
  const target = TARGETS[name];
  if (!target) {
    console.error(`unknown target '${name}'; one of: ${Object.keys(TARGETS).join(", ")}`);
    Deno.exit(2);
  }
  const output = `dist/edgenode-${name}${name.startsWith("windows") ? ".exe" : ""}`;
  const compiled = await new Deno.Command(Deno.execPath(), {
    args: [
      "compile",
      // Deno's npm cache, not the developers' node_modules (deno.json: nodeModulesDir manual).
      "--node-modules-dir=none",
      "--target",
      target,
      "--output",
      output,
      ...EXECUTABLE_FLAGS,
      BUNDLE,
    ],
    cwd: root,
    stdout: "inherit",
    stderr: "piped",
  }).output();
  const errors = new TextDecoder().decode(compiled.stderr);
  if (compiled.success) {
    console.log(`built ${output}`);
    continue;
  }
  failed++;
  console.error(errors.trim());
  if (/denort/i.test(errors)) {
    console.error(
      `\n${name}: deno compile could not get its runtime base (denort ${Deno.version.deno} for ` +
        `${target}). On a machine without that download, set DENORT_BIN to a local denort of ` +
        "that version, built for this target.",
    );
  }
}
Deno.exit(failed > 0 ? 1 : 0);
