/**
 * `edgenode models load|unload ID` against a real node running the tiny real model: the load's
 * progress as plain lines on a pipe and a bar on a terminal, --json, the state the node then reports, --context (kept in
 * the record, and the model loaded again with it; put back when the load or the unload before it
 * fails or Ctrl-C interrupts them, the model loaded before loaded again), and each refusal as one line: an unknown model
 * (404), one the engine cannot run (400), one memory cannot hold (507, with the figures).
 */
import assert from "node:assert/strict";
import { ensureTestEngine } from "../testing/engine.ts";
import {
  LAUNCHER_PERMISSIONS,
  MAIN,
  runEdgenode,
  startTestNode,
  type TestNode,
} from "../testing/node.ts";
import { edgenodeOnTerminal, HAS_SCRIPT } from "./helpers/cli_env.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";
import { createModel, uploadRaw } from "./helpers/store.ts";

/** `edgenode ARGS` against `node`, the way its owner runs it: the key from its data dir. */
function cli(node: TestNode, args: string[]) {
  return runEdgenode(args, { EDGENODE_NODE: node.url, EDGENODE_DATA_DIR: node.dataDir });
}

/** The model's entry in the node's OpenAI-compatible list. */
async function entry(node: TestNode, id: string) {
  const response = await fetch(`${node.url}/v1/models/${id}`);
  assert.equal(response.status, 200);
  return await response.json();
}

Deno.test("models load and unload: progress, state, --context, and the refusals", async (t) => {
  await ensureTestEngine();
  // The tiny model takes about 8 MiB with its 512-token context: 12 hold it, not a long one.
  await using node = await startTestNode({
    config: { apiKey: "a-load-command-test-key-0123456789", inference: { memoryLimitMb: 12 } },
  });
  await createModel(node, "tiny", "llm");
  assert.equal((await uploadRaw(node, "tiny", tinyLlamaGguf())).status, 200);
  await createModel(node, "empty", "llm");

  await t.step("load: plain progress lines on a pipe, 'loaded', and the node says so", async () => {
    const loaded = await cli(node, ["models", "load", "tiny"]);
    assert.equal(loaded.code, 0, loaded.stderr);
    assert.equal(loaded.stdout, "loaded tiny\n");
    assert.match(loaded.stderr, /^load tiny 100%$/m);
    assert.ok(!loaded.stderr.includes("\r"), "no redrawn bar when stderr is not a terminal");
    assert.equal((await entry(node, "tiny")).loaded, true);
    const again = await cli(node, ["models", "load", "tiny", "--json"]);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(JSON.parse(again.stdout), {
      id: "tiny",
      object: "model",
      kind: "llm",
      loaded: true,
    });
  });

  await t.step("on a terminal: the bar redrawn in place, as a pull draws it", async (t) => {
    if (!HAS_SCRIPT) {
      await t.step("skipped: no 'script' (util-linux) for a pseudo-terminal", () => {});
      return;
    }
    assert.equal((await cli(node, ["models", "unload", "tiny"])).code, 0);
    const { code, text } = await edgenodeOnTerminal(["models", "load", "tiny"], {
      EDGENODE_NODE: node.url,
      EDGENODE_DATA_DIR: node.dataDir,
    });
    assert.equal(code, 0, text);
    // The bar is redrawn in place: carriage return, erase the line (ESC [2K), the bar.
    // deno-lint-ignore no-control-regex
    assert.match(text, /\r\x1b\[2Kload tiny \[#{20}\] 100%/);
    assert.ok(!/^load tiny \d+%/m.test(text), "no plain progress lines on a terminal");
  });

  await t.step("unload: 'unloaded', and the node says so", async () => {
    const unloaded = await cli(node, ["models", "unload", "tiny"]);
    assert.equal(unloaded.code, 0, unloaded.stderr);
    assert.equal(unloaded.stdout, "unloaded tiny\n");
    assert.equal((await entry(node, "tiny")).loaded, false);
    const json = await cli(node, ["models", "unload", "tiny", "--json"]);
    assert.equal(JSON.parse(json.stdout).loaded, false, "not loaded is not an error");
  });

  await t.step("an unknown model, a model without its file: one line each, exit 1", async () => {
    const unknown = await cli(node, ["models", "load", "nosuch"]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^edgenode: loading nosuch: 404 [^\n]*nosuch[^\n]*\n$/);
    const empty = await cli(node, ["models", "load", "empty"]);
    assert.equal(empty.code, 1);
    assert.match(empty.stderr, /^edgenode: loading empty: 400 [^\n]*\n$/);
  });

  await t.step("--context: 507 with the figures when memory cannot hold it", async () => {
    assert.equal((await cli(node, ["models", "load", "tiny"])).code, 0, "loaded before");
    const refused = await cli(node, ["models", "load", "tiny", "--context", "16384"]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^edgenode: loading tiny: 507 not enough memory [^\n]*needs about \d+ MiB with a 16384-token context[^\n]*, and \d+ MiB is available/m,
    );
    assert.equal(refused.stderr.trim().split("\n").at(-1)?.startsWith("edgenode: "), true);
    const record = await (await fetch(`${node.storeUrl}/models/tiny`)).json();
    assert.ok(!record.gguf?.initContextSize, "the context that failed is not kept");
    const after = await entry(node, "tiny");
    assert.equal(after.loaded, true, "the model that was loaded is loaded again");
    assert.equal(after.info.max_context, 512, "with its old context");
    assert.equal((await cli(node, ["models", "load", "tiny"])).code, 0, "it loads as before");
  });

  await t.step("--context: kept in the record, the loaded model loaded again with it", async () => {
    assert.equal((await cli(node, ["models", "load", "tiny", "--context", "512"])).code, 0);
    assert.equal((await entry(node, "tiny")).info.max_context, 512);
    const smaller = await cli(node, ["models", "load", "tiny", "--context", "256"]);
    assert.equal(smaller.code, 0, smaller.stderr);
    const now = await entry(node, "tiny");
    assert.equal(now.loaded, true);
    assert.equal(now.info.max_context, 256);
    const record = await (await fetch(`${node.storeUrl}/models/tiny`)).json();
    assert.equal(record.gguf.initContextSize, 256);
    const bad = await cli(node, ["models", "load", "tiny", "--context", "lots"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--context takes a number of tokens from 1 to/);
  });

  await t.step("--context, Ctrl-C once the record has it: put back, loaded as before", async () => {
    assert.equal((await cli(node, ["models", "load", "tiny", "--context", "512"])).code, 0);
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", ...LAUNCHER_PERMISSIONS, MAIN, "models", "load", "tiny", "--context", "128"],
      env: { NO_COLOR: "1", EDGENODE_NODE: node.url, EDGENODE_DATA_DIR: node.dataDir },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    // Ctrl-C as soon as the record has the new context: the unload and the load are to come.
    const contextNow = async () =>
      (await (await fetch(`${node.storeUrl}/models/tiny`)).json()).gguf?.initContextSize;
    while (await contextNow() !== 128) await new Promise((r) => setTimeout(r, 2));
    child.kill("SIGINT");
    const [status, stderr] = await Promise.all([
      child.status,
      new Response(child.stderr).text(),
      child.stdout.cancel(),
    ]);
    assert.equal(status.code, 130, stderr);
    assert.match(stderr, /interrupted; tiny's old context is put back/);
    assert.equal(await contextNow(), 512, "the record's context put back");
    const now = await entry(node, "tiny");
    assert.equal(now.loaded, true, "loaded again, as it was");
    assert.equal(now.info.max_context, 512);
  });
});

Deno.test("models load --context: a failed unload puts the old context back", async () => {
  // Inference off: the record takes the new context, the unload that follows is refused (503).
  await using node = await startTestNode({
    config: { apiKey: "a-load-command-test-key-0123456789", inference: { enabled: false } },
  });
  await createModel(node, "tiny", "llm");
  const refused = await cli(node, ["models", "load", "tiny", "--context", "512"]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /^edgenode: unloading tiny: 503 [^\n]*inference[^\n]*\n$/);
  const record = await (await fetch(`${node.storeUrl}/models/tiny`)).json();
  assert.ok(!record.gguf?.initContextSize, "the record keeps its old context");
});
