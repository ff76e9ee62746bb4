/**
 * The bundle (`deno task bundle`) stands in for the single executable: run by the plain deno
 * binary with the executable's baked flags, an empty DENO_DIR, outside the repository and, where
 * the test may create a network namespace, without any network, it serves the registry, answers
 * JSON-RPC, serves the dashboard, runs a container and a chat completion (the engine code is in
 * the bundle; its npm packages are the tests' shared install), with the node and the container
 * narrowed in workers.
 */
import assert from "node:assert/strict";
import { packTar } from "modern-tar";
import meta from "../deno.json" with { type: "json" };
import { EXECUTABLE_FLAGS } from "../src/program/executable_flags.ts";
import { withTempDir } from "../testing/node.ts";
import { ensureTestEngine, TEST_ENGINE_DIR } from "../testing/engine.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DRIVER = new URL("./fixtures/bundle_driver.ts", import.meta.url).pathname;

/** Whether `unshare -n` works here (root, or user namespaces). */
async function canIsolateNetwork(): Promise<boolean> {
  return await new Deno.Command("unshare", { args: ["-n", "true"], stderr: "null" }).output()
    .then((output) => output.success, () => false);
}

Deno.test("the bundle runs with only the deno binary: registry, JSON-RPC, a container, a chat", () =>
  withTempDir(async (dir) => {
    await ensureTestEngine();
    await Deno.writeFile(`${dir}/tiny.gguf`, tinyLlamaGguf());
    // The task's own command, writing into the temporary folder.
    const task = meta.tasks.bundle.replace("dist/edgenode.js", `${dir}/edgenode.js`);
    const bundled = await new Deno.Command(Deno.execPath(), {
      args: task.split(" ").slice(1),
      cwd: ROOT,
      stderr: "piped",
    }).output();
    assert.ok(bundled.success, new TextDecoder().decode(bundled.stderr));
    const script = new TextEncoder().encode(
      `mimikModule.exports = function (context, req, res) {
        let key = "read";
        try { eval(${
        JSON.stringify(`import("file://${dir}/data/config.json", { with: { type: "json" } })`)
      }); key = typeof Deno; } catch (e) { key = e.name; }
        context.storage.setItem("visits", String(Number(context.storage.getItem("visits") || 0) + 1));
        res.end("hello from the bundle; the node's config: " + key +
          "; visits: " + context.storage.getItem("visits"));
      };`,
    );
    await Deno.writeFile(
      `${dir}/hello.tar`,
      await packTar([{
        header: { name: "index.js", size: script.length, type: "file" },
        body: script,
      }]),
    );
    for (const sub of ["deno-dir", "data", "work"]) await Deno.mkdir(`${dir}/${sub}`);
    await Deno.copyFile(DRIVER, `${dir}/driver.ts`);
    const driver = [
      Deno.execPath(),
      "run",
      "--no-prompt",
      "--no-config",
      "--allow-all",
      `${dir}/driver.ts`,
      `${dir}/edgenode.js`,
      `${dir}/data`,
      `${dir}/hello.tar`,
      JSON.stringify(EXECUTABLE_FLAGS),
      `${dir}/tiny.gguf`,
    ];
    const isolated = await canIsolateNetwork();
    const shell = `${isolated ? "ip link set lo up && " : ""}exec ${
      driver.map((a) => `'${a}'`).join(" ")
    }`;
    const output = await new Deno.Command(isolated ? "unshare" : "sh", {
      args: isolated ? ["-n", "sh", "-c", shell] : ["-c", shell],
      cwd: `${dir}/work`,
      clearEnv: true,
      env: {
        DENO_DIR: `${dir}/deno-dir`,
        HOME: `${dir}/work`,
        PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
        NO_COLOR: "1",
        EDGENODE_ENGINE_DIR: TEST_ENGINE_DIR,
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout);
    assert.ok(output.success, `${text}\n${new TextDecoder().decode(output.stderr)}`);
    const seen = JSON.parse(text.trim().split("\n").pop()!);
    assert.deepEqual(
      { ...seen, nodeId: typeof seen.nodeId },
      {
        created: 201,
        ready: true,
        page: "200 true",
        nodeId: "string",
        image: 201,
        container: "started",
        answer: "hello from the bundle; the node's config: EvalError; visits: 1",
        chat: "200 length",
      },
    );
    if (!isolated) console.log("note: no network namespace here; ran with the network present");
  }));
