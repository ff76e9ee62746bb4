/**
 * An engine stopped while its install runs (engine_process.ts): stop() does not wait for the
 * install, its installer ends its npm (a stand-in that takes its time) and leaves nothing.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { EngineProcess } from "./engine_process.ts";

Deno.test({
  name: "stop() during the install ends the installer's npm; no engine starts after it",
  ignore: Deno.build.os === "windows",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "edgenode-stop-install-" });
    const path = Deno.env.get("PATH") ?? "";
    try {
      const bin = join(dir, "bin");
      await Deno.mkdir(bin);
      await Deno.writeTextFile(
        join(bin, "npm"),
        `#!/bin/sh\necho $$ > "${dir}/npm.pid"\nexec sleep 60\n`,
      );
      await Deno.chmod(join(bin, "npm"), 0o755);
      Deno.env.set("PATH", `${bin}:${path}`);
      const engineDir = join(dir, "engine");
      await Deno.mkdir(engineDir);
      let exits = 0;
      const engine = new EngineProcess({
        engineDir,
        modelsDir: dir,
        scriptsDir: join(dir, "scripts"),
        maxThreads: 1,
        gpu: false,
        onExit: () => exits++,
      });
      const load = engine.call({
        op: "load",
        spec: { key: "m", path: join(dir, "m.gguf"), kind: "llm", threads: 1, memoryBudget: 1e9 },
      }).catch((error) => error);
      const pidFile = join(dir, "npm.pid");
      for (let tries = 0; !await Deno.stat(pidFile).then(() => true, () => false); tries++) {
        assert.ok(tries < 600, "npm never started");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const npm = Number((await Deno.readTextFile(pidFile)).trim());
      const started = Date.now();
      await engine.stop();
      assert.ok(Date.now() - started < 10_000, "stop() waited for the install");
      const error = await load;
      assert.match(String(error), /stopped/);
      assert.equal(exits, 0, "an engine was started after stop()");
      assert.throws(() => Deno.kill(npm, "SIGCONT"), "npm outlived its installer");
      // Give the installer its moment to clean up after its npm ended.
      for (let tries = 0; tries < 50; tries++) {
        if ((await Array.fromAsync(Deno.readDir(engineDir))).length === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.deepEqual(
        (await Array.fromAsync(Deno.readDir(engineDir))).map((entry) => entry.name),
        [],
      );
    } finally {
      Deno.env.set("PATH", path);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
