/**
 * `edgenode ps` and `edgenode status` against a real node running a tiny real model and a
 * microservice: the loaded models (not the idle ones) and the containers as tables and as one
 * JSON object; the node at a glance; and a node that does not answer (one line, exit 1).
 */
import assert from "node:assert/strict";
import { edgenode } from "./helpers/cli_env.ts";
import { ensureTestEngine } from "../testing/engine.ts";
import { EXAMPLES } from "../testing/mcm.ts";
import { startTestNode, type TestNode, withTempDir } from "../testing/node.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";
import { createModel, uploadRaw } from "./helpers/store.ts";

const KEY = "a-ps-status-test-key-0123456789";

async function upload(node: TestNode, id: string, bytes: Uint8Array) {
  await createModel(node, id, "llm");
  const response = await uploadRaw(node, id, bytes);
  assert.equal(response.status, 200, await response.text());
}

/** Loads `model` with a one-token chat. */
async function load(node: TestNode, model: string) {
  const response = await fetch(`${node.url}/v1/chat/completions`, {
    method: "POST",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 1 }),
  });
  assert.equal(response.status, 200, await response.text());
}

Deno.test("edgenode ps and status: loaded models and containers, and the node at a glance", () =>
  withTempDir(async (dir) => {
    await ensureTestEngine();
    await using node = await startTestNode({ config: { apiKey: KEY } });
    const env = { EDGENODE_NODE: node.url, EDGENODE_API_KEY: KEY };
    const cli = async (args: string[], code = 0) => {
      const result = await edgenode(args, env);
      assert.equal(result.code, code, `${args.join(" ")}:\n${result.stdout}${result.stderr}`);
      return result;
    };
    const empty = (await cli(["ps"])).stdout;
    assert.equal(empty, "models: none loaded\n\ncontainers: none\n");

    await upload(node, "tiny", tinyLlamaGguf());
    await upload(node, "idle", tinyLlamaGguf({ seed: 3 }));
    await load(node, "tiny");
    const built = await cli(["image", "build", `${EXAMPLES}hello-mim`, "-o", `${dir}/h.tar`]);
    assert.equal(built.code, 0);
    await cli(["deploy", `${dir}/h.tar`, "--name", "greeter"]);

    const [models, , containers, ...rest] = (await cli(["ps"])).stdout.trimEnd().split("\n\n")
      .flatMap((table) => [table.split("\n"), []]);
    assert.deepEqual(rest, [[]]);
    assert.match(models[0], /^MODEL\s+KIND\s+CONTEXT\s+BACKEND\s+GPU LAYERS$/);
    assert.deepEqual(models.slice(1).map((line) => line.split(/\s+/).slice(0, 2)), [
      ["tiny", "llm"],
    ]);
    assert.match(models[1], /^tiny\s+llm\s+\d+\s+(cpu|cuda|vulkan|metal)\s+\d+$/);
    assert.match(containers[0], /^CONTAINER\s+IMAGE\s+STATE\s+RESTARTS$/);
    assert.deepEqual(containers.slice(1).map((line) => line.split(/\s+/)), [
      ["greeter", "hello-mim", "started", "0"],
    ]);
    const json = JSON.parse((await cli(["ps", "--json"])).stdout);
    assert.deepEqual(Object.keys(json), ["models", "containers"]);
    assert.deepEqual(json.models.map((m: { id: string; loaded: boolean }) => [m.id, m.loaded]), [
      ["tiny", true],
    ]);
    assert.deepEqual(json.containers.map((c: { id: string }) => c.id), ["api-greeter"]);

    const lines = (await cli(["status"])).stdout.trimEnd().split("\n");
    const me = await (await fetch(`${node.url}/dashboard/v1/status`)).json();
    assert.deepEqual(lines.slice(0, 4), [
      `node       up at ${node.url}`,
      `name       ${me.name}`,
      `id         ${me.nodeId}`,
      `version    ${me.version}`,
    ]);
    assert.match(lines[4], /^uptime {5}\d+s$/);
    assert.equal(lines[5], "account    (none)");
    assert.equal(lines[6], "models     2 (2 ready, 1 loaded)");
    assert.equal(lines[7], "containers 1 (1 running)");
    assert.equal(lines[8], "peers      0 on the LAN");
    assert.match(lines[9], /^disk {7}\S+ \S+ free of \S+ \S+ \(data directory\)$/);
    const status = JSON.parse((await cli(["status", "--json"])).stdout);
    assert.equal(status.up, true);
    assert.equal(status.nodeId, me.nodeId);
    assert.deepEqual(status.models, { count: 2, ready: 2, loaded: 1 });
    assert.deepEqual(status.containers, { count: 1, running: 1 });
    assert.equal(status.peers, 0);
    assert.ok(status.disk.freeBytes > 0 && status.disk.totalBytes >= status.disk.freeBytes);

    // Without the API key the peers are not counted; the rest is public.
    const keyless = await edgenode(["status", "--json"], { EDGENODE_NODE: node.url });
    assert.equal(keyless.code, 0, keyless.stderr);
    assert.equal(JSON.parse(keyless.stdout).peers, undefined);
  }));

Deno.test("edgenode status: a node that does not answer is one line naming it, exit 1", async () => {
  // A port that was just free: nothing listens there.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${listener.addr.port}`;
  listener.close();
  const down = await edgenode(["status"], { EDGENODE_NODE: url });
  assert.equal(down.code, 1);
  assert.equal(down.stdout, "");
  assert.match(
    down.stderr,
    new RegExp(
      `^edgenode: no node answers at ${url} \\(connection refused\\); start one with ` +
        "'edgenode serve', or point to another with --node URL or EDGENODE_NODE\\n$",
    ),
  );
  const json = await edgenode(["status", "--json"], { EDGENODE_NODE: url });
  assert.equal(json.code, 1);
  assert.deepEqual(JSON.parse(json.stdout), { up: false, url, reason: "connection refused" });
  const ps = await edgenode(["ps"], { EDGENODE_NODE: url, EDGENODE_KEY: KEY });
  assert.equal(ps.code, 1);
  assert.match(ps.stderr, /cannot reach the node at .*connection refused.*is it running\?/);
});

Deno.test("edgenode ps and status on a node without inference or dashboard: what is unknown says so", async () => {
  await using node = await startTestNode({
    config: { apiKey: KEY, inference: { enabled: false }, dashboard: { enabled: false } },
  });
  const env = { EDGENODE_NODE: node.url, EDGENODE_API_KEY: KEY };
  const ps = await edgenode(["ps"], env);
  assert.equal(ps.code, 0, ps.stderr);
  assert.equal(
    ps.stdout,
    "models: the node serves no inference API (inference off)\n\ncontainers: none\n",
  );
  const status = await edgenode(["status"], env);
  assert.equal(status.code, 0, status.stderr);
  const me = await (await fetch(`${node.url}/jsonrpc/v1`, {
    method: "POST",
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getMe", params: [] }),
  })).json();
  const lines = status.stdout.trimEnd().split("\n");
  assert.deepEqual(lines.slice(1, 3), [
    `name       ${me.result.name}`,
    `id         ${me.result.nodeId}`,
  ]);
  assert.equal(lines[4], "uptime     unknown (the node's dashboard is off)");
  assert.equal(lines[6], "models     unknown (inference and the dashboard are off)");
  assert.equal(lines[7], "containers unknown (the node's dashboard is off)");
});
