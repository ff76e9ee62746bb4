/**
 * The engine's compute backend on a real node (issue 38), on a machine without a GPU (the test
 * machine; skipped where one is found): inference.gpu "auto" runs on the CPU and logs why once,
 * GET /models `info` shows `n_gpu_layers` 0 with the reason and the backend, the node's models
 * advert names the CPU; "cuda" or "vulkan" named is a 503 naming what is missing while the rest
 * of the node serves; and `deno task gpu-check` reports the CPU.
 */
import assert from "node:assert/strict";
import { api, chat, inferenceNode, listed, say, uploadModel } from "./helpers/inference.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";
import {
  chooseBackend,
  detectComputeLayers,
  systemLookup,
} from "../src/inference/engine_backend.ts";
import { runToEnd } from "../testing/run.ts";
import * as v from "valibot";
import { StatusSchema } from "../gen/dashboard/validators.ts";
import { dashboardClient } from "../src/sdk/clients.ts";
import { startTestNode, type TestNode } from "../testing/node.ts";
import { installFolder } from "../src/inference/engine_install.ts";
import { ensureTestEngine, TEST_ENGINE_DIR } from "../testing/engine.ts";

const TINY = tinyLlamaGguf({ contextLength: 512 });
const ASK = { model: "tiny", messages: say("Hello there"), max_tokens: 4, temperature: 0 };

/** Why this machine has a GPU for node-llama-cpp, or undefined on a CPU-only machine. */
async function gpuFound(): Promise<string | undefined> {
  const choice = chooseBackend("auto", await detectComputeLayers(systemLookup()), Deno.build);
  return choice.backend === "cpu" ? undefined : `this machine has ${choice.backend}`;
}
const GPU = await gpuFound();

/** The engine part of the dashboard's status (the node's health), checked against the spec. */
async function engineHealth(node: TestNode) {
  const { data } = await dashboardClient({ url: node.url }).GET("/dashboard/v1/status");
  return v.parse(StatusSchema, data).inference!;
}

Deno.test({
  name: "auto on a machine without a GPU: the CPU, said once, and n_gpu_layers 0 with why",
  ignore: GPU !== undefined,
  async fn() {
    await using node = await inferenceNode({
      tiny: { bytes: TINY, record: { gguf: { initGpuLayerSize: 99 } } },
      other: { bytes: tinyLlamaGguf({ contextLength: 512, seed: 3 }) },
    });
    const before = (await listed(node, "tiny"))!;
    assert.equal(before.info.n_gpu_layers, 99, "the record's, while not loaded");

    const answer = await chat(node, ASK);
    assert.ok(answer.choices[0].message.content.length > 0);
    const { info } = (await listed(node, "tiny"))!;
    assert.equal(info.n_gpu_layers, 0);
    assert.equal(info.backend, "cpu");
    assert.equal(info.vram_bytes, 0);
    assert.match(
      info.gpuLayersReason!,
      /^running on the CPU: no NVIDIA driver \(libnvidia-ml\.so\.1 not found\), no Vulkan loader \(libvulkan\.so\.1 not found\)$/,
    );
    const health = await engineHealth(node);
    assert.equal(health.gpu, "auto");
    assert.equal(health.backend, "cpu");
    assert.match(health.reason!, /no NVIDIA driver .* no Vulkan loader/);
    assert.equal(health.error, undefined);
    // A second model (a probe engine, then a load in the shared one) says nothing more.
    await chat(node, { ...ASK, model: "other" });
    const said = node.output().match(/inference engine: .*running on the CPU/g) ?? [];
    assert.equal(said.length, 1, node.output());
    assert.match(said[0], /no NVIDIA driver .* no Vulkan loader .*: running on the CPU/);
  },
});

for (const gpu of ["cuda", "vulkan"] as const) {
  Deno.test({
    name: `"${gpu}" named on a machine without it: 503 naming what is missing, the node serves`,
    ignore: GPU !== undefined,
    async fn() {
      await using node = await inferenceNode({ tiny: { bytes: TINY } }, { gpu });
      const missing = gpu === "cuda"
        ? /inference\.gpu is "cuda" but it cannot run here: no NVIDIA driver \(libnvidia-ml\.so\.1 not found\)/
        : /inference\.gpu is "vulkan" but it cannot run here: no Vulkan loader \(libvulkan\.so\.1 not found\)/;
      for (let attempt = 0; attempt < 2; attempt++) {
        const response = await api(node, "/chat/completions", ASK);
        const body = await response.json();
        assert.equal(response.status, 503, JSON.stringify(body));
        assert.match(body.error.message, missing);
      }
      // Never a silent CPU fallback: no engine ran, and the model stays loadable once fixed.
      assert.doesNotMatch(node.output(), /running on the CPU/);
      const { loaded, info } = (await listed(node, "tiny"))!;
      assert.equal(loaded, false);
      assert.equal(info.n_gpu_layers, 0);
      const health = await engineHealth(node);
      assert.equal(health.gpu, gpu);
      assert.equal(health.backend, undefined);
      assert.match(health.error!, missing);
      // The rest of the node serves.
      const models = await api(node, "/models");
      assert.equal(models.status, 200);
      await models.body?.cancel();
    },
  });
}

Deno.test({
  name: "a GPU found whose build does not load: a 503 saying so, never the CPU instead",
  ignore: GPU !== undefined,
  async fn() {
    // A Vulkan loader where detection looks (PATH, as node-llama-cpp's does), and a "Vulkan" engine folder
    // that holds only the CPU build: auto picks Vulkan, whose build then fails to load.
    const dir = await Deno.makeTempDir({ prefix: "edgenode-backend-" });
    try {
      await Deno.mkdir(`${dir}/lib`);
      await Deno.writeFile(`${dir}/lib/libvulkan.so.1`, new Uint8Array());
      const cpu = await ensureTestEngine();
      const vulkan = installFolder(`${dir}/engine`, "vulkan");
      await Deno.mkdir(`${dir}/engine`);
      // Hard links where the test engine shares the file system, else a copy.
      let copied = await runToEnd("cp", { args: ["-al", cpu, vulkan] });
      if (copied.code !== 0) copied = await runToEnd("cp", { args: ["-r", cpu, vulkan] });
      assert.equal(copied.code, 0, copied.stderr);
      await using node = await startTestNode({
        config: { apiKey: "an-inference-test-key-0123456789" },
        env: {
          PATH: `${dir}/lib:${Deno.env.get("PATH")}`,
          // Deno refuses to start processes that inherit it: the node blanks it for its own.
          LD_LIBRARY_PATH: `${dir}/lib`,
          EDGENODE_ENGINE_DIR: `${dir}/engine`,
        },
      });
      await uploadModel(node, "tiny", TINY);
      for (let attempt = 0; attempt < 2; attempt++) {
        const response = await api(node, "/chat/completions", ASK);
        const body = await response.json();
        assert.equal(response.status, 503, JSON.stringify(body));
        assert.match(
          body.error.message,
          /^the inference engine cannot run on vulkan: the vulkan build of llama\.cpp \(@node-llama-cpp\/linux-x64-vulkan\) did not load: /,
        );
      }
      const health = await engineHealth(node);
      assert.equal(health.backend, "vulkan");
      assert.match(health.error!, /cannot run on vulkan/);
      assert.match(node.output(), /inference engine: running on vulkan \(no NVIDIA driver/);
      assert.doesNotMatch(node.output(), /running on the CPU/);
      const { loaded } = (await listed(node, "tiny"))!;
      assert.equal(loaded, false, "not marked failed, not loaded on the CPU");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** Why the engine cannot be installed here (no npm, no network), or undefined. */
const NO_ENGINE = GPU === undefined
  ? await ensureTestEngine().then(() => undefined, (error) => (error as Error).message)
  : undefined;
if (NO_ENGINE) console.warn(`skipping the gpu-check test: ${NO_ENGINE}`);

Deno.test({
  name: "deno task gpu-check reports the CPU on a machine without a GPU",
  ignore: GPU !== undefined || NO_ENGINE !== undefined,
  async fn() {
    const work = await Deno.makeTempDir({ prefix: "gpu-check-" });
    const done = await runToEnd(Deno.execPath(), {
      args: ["task", "--quiet", "gpu-check", "--size", "small"],
      env: { EDGENODE_ENGINE_DIR: TEST_ENGINE_DIR, GPU_CHECK_DIR: work, GPU_CHECK_TOKENS: "16" },
    }).finally(() => Deno.remove(work, { recursive: true }));
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /backend: cpu/);
    assert.match(done.stdout, /no NVIDIA driver/);
    assert.match(done.stdout, /layers offloaded: 0/);
    // The sized model (testing/sized_llama.ts) loads and generates every token asked for.
    assert.match(done.stdout, /3\.4 M parameters/);
    assert.match(done.stdout, /cpu \(first start\): [\d.]+ tokens\/s \(16 tokens/);
  },
});
