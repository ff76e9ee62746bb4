/**
 * arm64, the architecture of most edge devices, under user-mode emulation (testing/
 * arm64_emulation.ts): the node's bundle, run by the arm64 Deno under qemu-aarch64-static with
 * the single executable's flags, an empty DENO_DIR and link-local discovery left on (multicast
 * cannot be set up under emulation: the node must serve on), answers the registry and JSON-RPC
 * and says in its signed self description that it runs on aarch64. Where arm64 programs run
 * through a binfmt_misc entry (a user namespace's own, Linux 6.7 and later, or the machine's),
 * the node's own child processes start too: a microservice
 * answers, the engine's linux-arm64 package generates tokens of the tiny model, and
 * deploy/install.sh installs the arm64 Deno and the bundle and the installed command runs.
 * Skipped, with the reason printed, where the tools cannot be had.
 */
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { packTar } from "modern-tar";
import meta from "../deno.json" with { type: "json" };
import { newChallenge, verifyProof } from "../src/identity/node_proof.ts";
import { EXECUTABLE_FLAGS } from "../src/program/executable_flags.ts";
import {
  ARM64_CACHE,
  type Arm64Emulation,
  arm64Emulation,
  type EmulatedNode,
  NO_BINFMT,
  startEmulatedNode,
} from "../testing/arm64_emulation.ts";
import { withPrivateGroup, withTempDir } from "../testing/node.ts";
import { runToEnd } from "../testing/run.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const KEY = "an-arm64-test-key-of-enough-length";
/** Each request's bound: generous, as emulation is 5 to 20 times slower. */
const REQUEST_MS = 30_000;
/**
 * A microservice's start and first answer: its client's process starts and loads the code under
 * emulation, 12 to 14 s on a quiet machine, over 30 s on a busy one.
 */
const FIRST_ANSWER_MS = 120_000;
/** A chat's bound: the first one installs the engine (npm) and loads it under emulation. */
const CHAT_MS = 300_000;

/** Seconds since `start`, to one decimal. */
const since = (start: number) => ((performance.now() - start) / 1000).toFixed(1);

/** A request to the node with the API key, bounded. */
function call(node: EmulatedNode, path: string, init: RequestInit = {}, ms = REQUEST_MS) {
  return fetch(`${node.url}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${KEY}`, ...init.headers },
    signal: AbortSignal.timeout(ms),
  });
}

/** POSTs JSON; the response. */
function post(node: EmulatedNode, path: string, body: unknown, ms?: number) {
  return call(node, path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  }, ms);
}

/** A one-file microservice image that answers with a greeting. */
async function helloImage(): Promise<Uint8Array> {
  const script = new TextEncoder().encode(
    `mimikModule.exports = function (context, req, res) { res.end("hello from arm64"); };`,
  );
  return await packTar([{
    header: { name: "index.js", size: script.length, type: "file" },
    body: script,
  }]);
}

/** The tiny model recorded and uploaded, then a chat with it: its answer and how long it took. */
async function firstChat(node: EmulatedNode) {
  const chatting = performance.now();
  await (await post(node, "/ai/store/v1/models", { id: "tiny", version: "1.0.0", kind: "llm" }))
    .body?.cancel();
  const uploaded = await call(node, "/ai/store/v1/models/tiny/upload", {
    method: "POST",
    headers: { "Content-Type": "application/octet-stream" },
    body: tinyLlamaGguf() as BufferSource,
  });
  assert.equal((await uploaded.json()).readyToUse, true);
  const chat = await post(node, "/v1/chat/completions", {
    model: "tiny",
    messages: [{ role: "user", content: "hello" }],
    max_tokens: 4,
  }, CHAT_MS);
  return { status: chat.status, completion: await chat.json(), seconds: since(chatting) };
}

/**
 * deploy/install.sh, staged in `dir` with the arm64 Deno and `bundle`, as a user of an arm64
 * machine runs it; then the installed command's `version`, and what `file` says of the installed
 * deno (where `file` is installed).
 */
async function installOnArm64(emulation: Arm64Emulation, dir: string, bundle: string) {
  const stage = `${dir}/stage`;
  const install = emulation.command("sh", [
    `${ROOT}deploy/install.sh`,
    "--destdir",
    stage,
    "--bundle",
    bundle,
  ]);
  const installed = await runToEnd(install.program, {
    args: install.args,
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin", HOME: `${dir}/home`, EDGENODE_DENO: emulation.deno },
  });
  const command = emulation.command(`${stage}/usr/local/bin/edgenode`, ["version"]);
  const version = await runToEnd(command.program, { args: command.args });
  const arch = await runToEnd("file", { args: ["-b", `${stage}/usr/local/lib/edgenode/deno`] })
    .catch(() => undefined);
  return { installed, version, arch };
}

Deno.test("arm64 under user-mode emulation: the bundle serves, its microservice and engine run, install.sh installs", async (t) => {
  const preparing = performance.now();
  const emulation = await arm64Emulation();
  if ("missing" in emulation) {
    console.log(`arm64_emulation_test skipped: ${emulation.missing}`);
    return;
  }
  const timings: string[] = [`install ${since(preparing)} s`];
  const binfmt = emulation.binfmt !== undefined;
  console.log(
    binfmt
      ? `arm64_emulation_test: arm64 programs run through the ${emulation.binfmt}'s binfmt_misc`
      : `arm64_emulation_test: the microservice, chat and install.sh parts are skipped: ${NO_BINFMT}`,
  );
  await withTempDir(async (dir) => {
    // deno task bundle's own command, writing into the temporary folder.
    const bundle = `${dir}/edgenode.js`;
    const task = meta.tasks.bundle.replace("dist/edgenode.js", bundle);
    const bundled = await runToEnd(Deno.execPath(), { args: task.split(" ").slice(1), cwd: ROOT });
    assert.equal(bundled.code, 0, bundled.stderr);
    for (const sub of ["deno-dir", "data", "home"]) await Deno.mkdir(`${dir}/${sub}`);
    // install.sh runs beside the node (it takes a while under emulation); its step checks it.
    const installSh = binfmt ? installOnArm64(emulation, dir, bundle) : undefined;
    // Waited for before the folder goes, whatever happens to the node.
    await using _installSh = {
      [Symbol.asyncDispose]: async () => void await installSh?.catch(() => {}),
    };
    // Link-local discovery stays on, as a user's node has it (in a private group, so that it
    // never reaches a user's node on this machine). A container's memory counts qemu's
    // cache of translated code: a hello container's process was seen at 499 MB, over the
    // default budget of 248 MB (mcm.memoryMb 128 and the runtime's 120), and ended as out of
    // memory. No arm64 machine carries that cache. A process of its own per container: a client's
    // shared process checks its RSS against 96 MB plus 24 MB per container still loading, which
    // qemu's cache passes within 2 s whenever the load takes longer (seen on a busy machine).
    const config = withPrivateGroup({
      apiKey: KEY,
      mcm: { memoryMb: 1024, containerProcess: "per-container" },
    });
    await Deno.writeTextFile(`${dir}/data/config.json`, JSON.stringify(config), { mode: 0o600 });
    const npm = await runToEnd("sh", { args: ["-c", "command -v npm"] });
    const path = [...(npm.code === 0 ? [dirname(npm.stdout.trim())] : []), "/usr/bin", "/bin"];
    const starting = performance.now();
    await using node = await startEmulatedNode(emulation, [
      ...EXECUTABLE_FLAGS,
      "--no-config",
      bundle,
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--data-dir",
      `${dir}/data`,
    ], {
      DENO_DIR: `${dir}/deno-dir`,
      HOME: `${dir}/home`,
      PATH: path.join(":"),
      // The engine's arm64 install is kept between runs (used only where binfmt lets it start).
      EDGENODE_ENGINE_DIR: `${ARM64_CACHE}/engine`,
    });
    timings.push(`node start ${since(starting)} s`);

    await t.step("the registry records a model and lists it", async () => {
      const requests = performance.now();
      const created = await post(node, "/ai/store/v1/models", {
        id: "m",
        version: "1.0.0",
        kind: "llm",
      });
      assert.equal(created.status, 201, await created.text());
      const listed = await (await call(node, "/ai/store/v1/models")).json();
      assert.ok(listed.data.some((m: { id: string }) => m.id === "m"), JSON.stringify(listed));
      timings.push(`registry ${since(requests)} s`);
    });

    await t.step("JSON-RPC getMe answers", async () => {
      const requests = performance.now();
      const me = await (await post(node, "/jsonrpc/v1", {
        jsonrpc: "2.0",
        id: 1,
        method: "getMe",
        params: [],
      })).json();
      assert.match(me.result.nodeId, /^[0-9a-f]{56}$/);
      timings.push(`getMe ${since(requests)} s`);
    });

    await t.step("its signed self description says aarch64", async () => {
      const challenge = newChallenge();
      const ping = await (await call(node, `/mds/v1/nodes?ping=true&challenge=${challenge}`))
        .json();
      const self = await verifyProof(ping.data.proof, challenge, ping.data.id);
      const cpu = self.characteristics?.find((c) => c.name === "cpu")?.value;
      assert.match(cpu ?? "", /^aarch64, \d+ cores$/);
    });

    await t.step({
      name: "a microservice answers (needs binfmt_misc)",
      ignore: !binfmt,
      fn: async () => {
        const image = await call(node, "/mcm/v1/images?name=hello", {
          method: "POST",
          headers: { "Content-Type": "application/x-tar" },
          body: (await helloImage()) as BufferSource,
        });
        const imageText = await image.text();
        assert.equal(image.status, 201, imageText);
        const started = await post(
          node,
          "/mcm/v1/containers",
          { name: "hello", image: "hello" },
          FIRST_ANSWER_MS,
        );
        const container = await started.json();
        assert.equal(container.state, "started", JSON.stringify(container));
        const answer = await fetch(`${node.url}${container.env["MCM.BASE_API_PATH"]}/`, {
          signal: AbortSignal.timeout(FIRST_ANSWER_MS),
        });
        assert.equal(await answer.text(), "hello from arm64", node.output());
      },
    });

    await t.step({
      name: "the engine's linux-arm64 package generates tokens (needs binfmt_misc)",
      ignore: !binfmt,
      fn: async () => {
        const { status, completion, seconds } = await firstChat(node);
        assert.equal(status, 200, JSON.stringify(completion));
        assert.equal(completion.choices[0].finish_reason, "length");
        timings.push(`first chat ${seconds} s`);
      },
    });

    await t.step({
      name: "deploy/install.sh installs the arm64 Deno and the command runs (needs binfmt_misc)",
      ignore: !binfmt,
      fn: async () => {
        const { installed, version, arch } = (await installSh)!;
        assert.equal(installed.code, 0, installed.stdout + installed.stderr);
        assert.equal(version.code, 0, version.stderr);
        assert.match(version.stdout, /^edgenode 0\.1\.0\n/);
        if (arch) assert.match(arch.stdout, /aarch64/);
      },
    });
    const discovery = node.output().split("\n").find((line) => line.startsWith("discovery:"));
    if (discovery) console.log(`arm64_emulation_test: the node said: ${discovery}`);
    console.log(`arm64_emulation_test timings: ${timings.join(", ")}`);
  });
});
