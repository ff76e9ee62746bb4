/**
 * The engine's install on a real node (issue 38): a node whose engine folder is empty installs
 * the engine on the first load, and the load's stream, the dashboard's status and the node's log
 * show its progress ("installing the cpu engine 48/79 MB"), the log in a few lines, not one per
 * measure. npm installs from its cache (the test engine's install filled it).
 *
 * A real source build of llama.cpp (engine_source_build.ts) takes many minutes on two cores: it
 * runs only with EDGENODE_SOURCE_BUILD_TEST set (to 1, or to an engine folder to build in or
 * reuse), for the CPU, and the engine then starts on that build.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { tmpdir } from "node:os";
import * as v from "valibot";
import { StatusSchema } from "../gen/dashboard/validators.ts";
import { dashboardClient } from "../src/sdk/clients.ts";
import { installFolder, isInstalled } from "../src/inference/engine_install.ts";
import { EVENT_PREFIX } from "../src/inference/engine_protocol.ts";
import { engineRunFlags } from "../src/inference/engine_permissions.ts";
import { ensureTestEngine } from "../testing/engine.ts";
import { runToEnd } from "../testing/run.ts";
import { startTestNode, type TestNode } from "../testing/node.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";
import { allData, uploadModel } from "./helpers/inference.ts";

Deno.test({
  name: "a first load installs the engine, its progress in the load's stream, status and log",
  sanitizeResources: false,
  async fn() {
    await ensureTestEngine();
    const engineDir = await Deno.makeTempDir({ prefix: "edgenode-install-" });
    try {
      await using node = await startTestNode({
        config: {
          apiKey: "an-inference-test-key-0123456789",
          inference: { gpu: false },
        },
        env: { EDGENODE_ENGINE_DIR: engineDir },
      });
      await uploadModel(node, "tiny", tinyLlamaGguf({ contextLength: 512 }));
      const dashboard = dashboardClient({ url: node.url });
      const seen: unknown[] = [];
      let polling = true;
      const poll = (async () => {
        while (polling) {
          const { data } = await dashboard.GET("/dashboard/v1/status");
          const installing = v.parse(StatusSchema, data).inference?.installing;
          if (installing) seen.push(installing);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();
      const response = await fetch(`${node.storeUrl}/models`, {
        method: "PUT",
        headers: node.auth({ "Content-Type": "application/json" }),
        body: JSON.stringify({ id: "tiny", action: "load" }),
      });
      const messages = await allData(response) as Record<string, string>[];
      polling = false;
      await poll;
      assert.deepEqual(messages.at(-1), { id: "tiny", object: "model", kind: "llm", loaded: true });
      const texts = messages.slice(0, -1).map((message) => message.progress);
      const installs = texts.filter((text) => text.startsWith("<|installing_engine|>"));
      assert.ok(installs.length >= 1, JSON.stringify(texts));
      for (const text of installs) {
        assert.match(text, /^<\|installing_engine\|> installing the cpu engine \d+\/79 MB<br \/>$/);
        // A client reading the load's percent finds none in it.
        assert.doesNotMatch(text, /%/);
      }
      // The install comes before the load's percent, which still ends at 100.
      const firstLoad = texts.findIndex((text) => text.startsWith("<|loading_model|>"));
      assert.ok(firstLoad > texts.lastIndexOf(installs.at(-1)!), JSON.stringify(texts));
      assert.equal(texts.at(-1), "<|loading_model|> 100%<br />");
      // The status showed it while it ran, and no more once done.
      assert.ok(seen.length >= 1, "the status never showed the install");
      assert.deepEqual(Object.keys(seen[0] as object).sort(), [
        "backend",
        "done",
        "stage",
        "total",
      ]);
      const { data } = await dashboard.GET("/dashboard/v1/status");
      assert.equal(v.parse(StatusSchema, data).inference?.installing, undefined);
      // The log: the start, at most three quarters and the end, not a line per measure.
      const log = node.output().split("\n").filter((line) =>
        /inference engine/.test(line) && /install/.test(line)
      );
      assert.ok(log.length >= 2 && log.length <= 5, log.join("\n"));
      assert.match(log.join("\n"), /installed the inference engine for cpu/);
      // Complete, renamed into place, nothing partial left.
      assert.ok(await isInstalled(installFolder(engineDir, "cpu")));
      const left = (await Array.fromAsync(Deno.readDir(engineDir))).map((entry) => entry.name);
      assert.deepEqual(left.filter((name) => name.includes(".partial-")), []);
    } finally {
      await Deno.remove(engineDir, { recursive: true }).catch(() => {});
    }
  },
});

/** The message of a load's failure: a 503 answer, or the stream's last event. */
async function loadFailure(node: TestNode, id: string): Promise<string> {
  const response = await fetch(`${node.storeUrl}/models`, {
    method: "PUT",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify({ id, action: "load" }),
  });
  if (!response.ok) return JSON.stringify(await response.json());
  const messages = await allData(response) as { error?: unknown }[];
  assert.ok(messages.at(-1)?.error, JSON.stringify(messages));
  return JSON.stringify(messages.at(-1));
}

Deno.test({
  name: "a failed install's answer names no host path, and npm is not run again at each load",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "edgenode-npm-fails-" });
    try {
      // An npm that fails as a full disk or a denied folder does: naming the engine's folder.
      const bin = join(dir, "bin");
      await Deno.mkdir(bin);
      const engineDir = join(dir, "engine");
      await Deno.mkdir(engineDir);
      await Deno.writeTextFile(
        join(bin, "npm"),
        `#!/bin/sh\necho run >> "${dir}/npm-runs"\n` +
          `echo "npm error ENOSPC: no space left, write '$PWD/node_modules/x'" >&2\nexit 1\n`,
      );
      await Deno.chmod(join(bin, "npm"), 0o755);
      await using node = await startTestNode({
        config: { apiKey: "an-inference-test-key-0123456789", inference: { gpu: false } },
        env: { EDGENODE_ENGINE_DIR: engineDir, PATH: `${bin}:${Deno.env.get("PATH")}` },
      });
      await uploadModel(node, "tiny", tinyLlamaGguf({ contextLength: 512 }));
      const first = await loadFailure(node, "tiny");
      assert.match(first, /could not be installed: npm install failed/);
      assert.doesNotMatch(first, new RegExp(`${dir}|edgenode-npm-fails|/node_modules`));
      assert.match(first, /<path>/);
      const second = await loadFailure(node, "tiny");
      assert.match(second, /tried again by the first load after/);
      assert.doesNotMatch(second, new RegExp(`${dir}|edgenode-npm-fails`));
      assert.equal((await Deno.readTextFile(join(dir, "npm-runs"))).trim().split("\n").length, 1);
      // The whole words stay in the node's log.
      assert.match(node.output(), /ENOSPC/);
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

const SOURCE_BUILD = Deno.env.get("EDGENODE_SOURCE_BUILD_TEST");

Deno.test({
  name: "a source build of llama.cpp for the CPU installs, and the engine starts on it",
  ignore: !SOURCE_BUILD,
  sanitizeResources: false,
  async fn() {
    const engineDir = SOURCE_BUILD === "1"
      ? join(tmpdir(), "edgenode-test-source-build")
      : SOURCE_BUILD!;
    await Deno.mkdir(engineDir, { recursive: true });
    const folder = installFolder(engineDir, "cpu", "linux-x64-cpu-source");
    const installer = new URL("../src/inference/engine_install.ts", import.meta.url).pathname;
    if (!await isInstalled(folder)) {
      const done = await runToEnd(Deno.execPath(), {
        args: [
          "run",
          "--no-config",
          // As the node runs it (install_runner.ts).
          "--allow-run=npm,git,node",
          "--allow-env",
          "--allow-read",
          `--allow-write=${engineDir}`,
          installer,
          folder,
          "cpu",
          "--source-build",
        ],
      });
      assert.equal(done.code, 0, done.stderr);
      assert.match(done.stdout, /"stage":"build","done":\d+,"total":\d+/);
    }
    await Deno.stat(`${folder}/node_modules/node-llama-cpp/llama/lastBuild.json`);
    // The engine's own permissions (engine_process.ts), its code read from the checkout.
    const engine = new URL("../src/inference/engine_main.ts", import.meta.url).pathname;
    const code = new URL("../", import.meta.url).pathname;
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        ...engineRunFlags(folder, [code]),
        engine,
        folder,
        "2",
        "cpu",
        "test",
      ],
      clearEnv: true,
      env: { HOME: engineDir, NO_COLOR: "1" },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let text = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      if (text.includes("\n")) break;
    }
    await child.stdin.close();
    await child.status;
    await child.stderr.cancel();
    const ready = JSON.parse(text.split("\n")[0].slice(EVENT_PREFIX.length));
    assert.deepEqual([ready.type, ready.buildType, ready.backend], ["ready", "localBuild", "cpu"]);
  },
});

if (!SOURCE_BUILD) {
  console.log(
    "skipping the real source build (minutes): set EDGENODE_SOURCE_BUILD_TEST=1 to run it",
  );
}
