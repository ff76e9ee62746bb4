import assert from "node:assert/strict";
import { NEUTRAL_DIRECTORY, neutralPaths } from "./stack_paths.ts";

Deno.test("the sandbox's directory is named neutrally, as a URL and as a path", () => {
  const scrub = neutralPaths("file:///data/my%20node/runtime/sandbox_worker.js");
  assert.equal(
    scrub("at f (file:///data/my%20node/runtime/sandbox_worker.js:1:2) /data/my node/runtime/x"),
    `at f (${NEUTRAL_DIRECTORY}sandbox_worker.js:1:2) ${NEUTRAL_DIRECTORY}x`,
  );
});

Deno.test("a blob: module (the single executable's workers) is named as a whole", () => {
  const url = "blob:null/8d1c0e3a-0000-4000-8000-000000000000";
  assert.equal(
    neutralPaths(url)(`at g (${url}:3:4)`),
    `at g (${NEUTRAL_DIRECTORY}sandbox_worker.js:3:4)`,
  );
});
