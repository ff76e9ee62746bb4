/**
 * The tasks work in a fresh clone: every task that type-checks the project with its npm packages
 * runs `deno install` first, so that packages only the type checker needs (`@types/busboy`, which
 * lazy npm caching never fetches) are there. `deno task compile` without it failed in a fresh
 * clone with 7 type errors before reaching the denort download (issue 40).
 */
import assert from "node:assert/strict";
import meta from "../deno.json" with { type: "json" };

/** Tasks that need no install first, each with the reason. */
const WITHOUT_INSTALL: Record<string, string> = {
  edgenode: "runs with --node-modules-dir=none: Deno fetches what the node imports",
  start: "runs the edgenode task",
  "install-cli": "runs with --node-modules-dir=none and imports no npm package",
  bundle: "deno bundle does not type-check",
  ci: "runs `deno install --frozen` first",
};

Deno.test("every task that type-checks the project runs `deno install` first", () => {
  const tasks: Record<string, string> = meta.tasks;
  for (const [name, command] of Object.entries(tasks)) {
    if (name in WITHOUT_INSTALL) continue;
    assert.match(command, /^deno install --quiet && /, `task ${name}: ${command}`);
  }
  for (const name of Object.keys(WITHOUT_INSTALL)) assert.ok(name in tasks, `no task ${name}`);
  assert.match(tasks.ci, /^deno install --frozen && /);
});

/** The npm packages of the install that declare lifecycle scripts, by name. */
async function packagesWithScripts(): Promise<string[]> {
  const found: string[] = [];
  const store = new URL("../node_modules/.deno/", import.meta.url);
  for await (const entry of Deno.readDir(store)) {
    const at = entry.name.lastIndexOf("@");
    if (!entry.isDirectory || at <= 0) continue;
    const name = entry.name.slice(0, at).replace("+", "/");
    const manifest = new URL(`${entry.name}/node_modules/${name}/package.json`, store);
    const scripts = await Deno.readTextFile(manifest).then(
      (text) => JSON.parse(text).scripts,
      () => undefined,
    );
    if (["preinstall", "install", "postinstall"].some((script) => scripts?.[script])) {
      found.push(name);
    }
  }
  return found.sort();
}

Deno.test("every npm package with build scripts is allowed or denied in deno.json, so install is quiet", async () => {
  // esbuild's and workerd's postinstall only check for (or fetch) their platform binary, which
  // Deno installs from the optional dependencies: denied, `deno install` prints no "Ignored build
  // scripts … deno approve-scripts" (what was not run before is still not run).
  const { allow = [], deny = [] } = meta.allowScripts as { allow?: string[]; deny?: string[] };
  const named = new Set([...allow, ...deny].map((spec) => spec.replace(/^npm:/, "")));
  const unnamed = (await packagesWithScripts()).filter((name) => !named.has(name));
  assert.deepEqual(unnamed, [], "name them in deno.json's allowScripts (allow or deny)");
});
