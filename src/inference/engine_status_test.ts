/** Detection (engine_status.ts): a detector that hangs fails with a clear 503, and is retried. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Unavailable } from "../errors/mod.ts";
import { detectBackendOnce } from "./engine_status.ts";

Deno.test("a detection that hangs fails after its timeout, and the next load detects again", async () => {
  const scripts = await Deno.makeTempDir({ prefix: "edgenode-detect-" });
  try {
    const installer = join(scripts, "engine_install.js");
    await Deno.writeTextFile(
      installer,
      "await new Promise((resolve) => setTimeout(resolve, 30_000));",
    );
    const started = Date.now();
    const error = await detectBackendOnce(scripts, "vulkan", 300).catch((error) => error);
    assert.ok(error instanceof Unavailable);
    assert.match(
      error.message,
      /could not be detected: it took over 0.3 s .*the next load tries again/,
    );
    assert.ok(Date.now() - started < 5000, "waited for the detector");
    // Not kept: a detector that answers now is asked.
    await Deno.writeTextFile(
      installer,
      'console.log(JSON.stringify({ backend: "vulkan", reason: "test", env: {} }));',
    );
    const usable = await detectBackendOnce(scripts, "vulkan", 10_000);
    assert.equal(usable.backend, "vulkan");
  } finally {
    await Deno.remove(scripts, { recursive: true });
  }
});
