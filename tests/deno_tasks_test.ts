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
