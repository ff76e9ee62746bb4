/**
 * Issue 34, the sandboxed worker's own accounting, tried as a hostile client would:
 * WebAssembly, SharedArrayBuffer and Intl memory count against the container's MCM.MEMORY_MB
 * (item 3); a microservice that replaces the globals the runtime uses cannot hold its request
 * count up or bend its CPU reports (item 4), in both process modes; and the stack traces a
 * microservice or its deployer sees name no path of the node (item 8).
 */
import assert from "node:assert/strict";
import {
  MEMORY_SERVICE,
  POISON_SERVICE,
  STACK_SERVICE,
} from "./helpers/hostile_sandbox_services.ts";
import {
  containerRecord,
  deployScript,
  mcm,
  postContainer,
  scriptImage,
  uploadImage,
} from "../testing/mcm.ts";
import { startTestNode, type TestNode, waitFor } from "../testing/node.ts";

const CONFIG = { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } };
const PER_CONTAINER = { ...CONFIG, mcm: { containerProcess: "per-container" } };

const container = containerRecord;

// deno-lint-ignore no-explicit-any
async function json(url: string): Promise<any> {
  const response = await fetch(url, { signal: AbortSignal.timeout(20_000) });
  const text = await response.text();
  assert.equal(response.status, 200, `${url}: ${response.status} ${text}`);
  return JSON.parse(text);
}

/** Sends a request whose answer does not matter (the microservice may break its own path). */
async function poke(url: string): Promise<void> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(15_000) });
    await response.body?.cancel();
  } catch {
    // A poisoned response path may never answer; the watchdog is what the test watches.
  }
}

/** Waits until container `id` restarted at least `count` times; its lastError then. */
async function ended(node: TestNode, id: string, count: number, ms: number): Promise<string> {
  await waitFor(async () => (await container(node, id)).restarts >= count, `${id} ended`, ms);
  return (await container(node, id)).lastError ?? "";
}

/** MEMORY_SERVICE as `name` and as "calm", both alice's with MCM.MEMORY_MB 64. */
async function hogAndCalm(node: TestNode, name: string) {
  const env = { "MCM.MEMORY_MB": "64" };
  const { container: hog, url } = await deployScript(node, name, MEMORY_SERVICE, env, "alice");
  const { container: calm, url: calmUrl } = await deployScript(
    node,
    "calm",
    MEMORY_SERVICE,
    env,
    "alice",
  );
  return { hog, url, calm, calmUrl };
}

Deno.test("WebAssembly and SharedArrayBuffer memory is refused past MCM.MEMORY_MB, in the code", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const { hog, url, calm, calmUrl } = await hogAndCalm(node, "wasm");
  assert.deepEqual(await json(`${calmUrl}/heap`), { ok: 40 }, "a legitimate 40 MiB heap");
  const memory = await json(`${url}/memory`);
  assert.equal(
    memory.error,
    "RangeError",
    `a 200 MB WebAssembly.Memory: ${JSON.stringify(memory)}`,
  );
  assert.match(memory.message, /MCM\.MEMORY_MB \(64 MB\)/);
  const grown = await json(`${url}/grow`);
  assert.equal(grown.error, "RangeError", `grow past the limit: ${JSON.stringify(grown)}`);
  assert.ok(grown.mb < 64, `grown to ${grown.mb} MiB`);
  // A resizable view would grow it past the wrapped grow(): not there.
  const resizable = await json(`${url}/resizable`);
  assert.equal(resizable.error, "TypeError", `a resizable buffer: ${JSON.stringify(resizable)}`);
  const inside = await json(`${url}/wasm-grow`);
  assert.ok(inside.mb < 64, `memory.grow inside a module stops at the limit: ${inside.mb} MiB`);
  const hidden = await json(`${url}/hidden-grow`);
  assert.ok(
    hidden.error === "RangeError" || hidden.ok < 64,
    `a module's own memory is bounded too: ${JSON.stringify(hidden)}`,
  );
  const shared = await json(`${url}/shared`);
  assert.equal(shared.error, "RangeError", `a 200 MB SharedArrayBuffer: ${JSON.stringify(shared)}`);
  for (const id of [hog.id, calm.id]) {
    const record = await container(node, id);
    assert.equal(record.restarts, 0, `${id} was not ended (${record.lastError})`);
  }
  assert.deepEqual(await json(`${calmUrl}/`), { ok: "up" });
});

Deno.test("Intl objects are charged to their container: holding 80 MiB of them ends it, not its sibling", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const { hog, url, calm, calmUrl } = await hogAndCalm(node, "intl");
  assert.deepEqual(await json(`${calmUrl}/heap`), { ok: 40 });
  await poke(`${url}/intl`);
  assert.match(await ended(node, hog.id, 1, 15_000), /out of memory/);
  const other = await container(node, calm.id);
  assert.equal(other.restarts, 0, `the sibling went on (${other.lastError})`);
});

for (const [mode, config] of [["per-client", CONFIG], ["per-container", PER_CONTAINER]] as const) {
  Deno.test(`${mode}: replacing Atomics and Math does not hide a busy background loop or a runaway one`, async () => {
    await using node = await startTestNode({ config });
    const { container: burner, url } = await deployScript(
      node,
      "burner",
      POISON_SERVICE,
      {},
      "eve",
    );
    const { container: spinner, url: spinUrl } = await deployScript(
      node,
      "spinner",
      POISON_SERVICE,
      {},
      "eve",
    );
    const { container: calm, url: calmUrl } = await deployScript(
      node,
      "calm",
      POISON_SERVICE,
      {},
      "eve",
    );
    const began = Date.now();
    await poke(`${url}/burn-light`);
    await poke(`${spinUrl}/spin`);
    // The runaway loop: the 3-second check while serving no request (not the request's 32 s).
    assert.match(await ended(node, spinner.id, 1, 15_000), /without yielding while serving no/);
    // The background loop at 90% of a core: over the 10% budget within seconds.
    assert.match(
      await ended(node, burner.id, 1, 25_000),
      /more CPU than its budget while serving no request/,
    );
    assert.ok(Date.now() - began < 30_000, `both ended in ${Date.now() - began} ms`);
    assert.equal((await container(node, calm.id)).restarts, 0, "the sibling went on");
    assert.equal(await (await fetch(`${calmUrl}/`)).text(), "up");
  });

  Deno.test(`${mode}: replacing every global the runtime touches still leaves the CPU budget in force`, async () => {
    await using node = await startTestNode({ config });
    const env = { "MCM.MAX_EXECUTION_TIME_SEC": "5" };
    const { container: late, url } = await deployScript(node, "late", POISON_SERVICE, env, "eve");
    const { container: early, url: earlyUrl } = await deployScript(
      node,
      "early",
      POISON_SERVICE,
      env,
      "eve",
    );
    const { container: calm, url: calmUrl } = await deployScript(
      node,
      "calm",
      POISON_SERVICE,
      {},
      "eve",
    );
    await poke(`${url}/burn`);
    await poke(`${earlyUrl}/burn-first`);
    // Their reports still come (not ended for silence), the node's pings are answered (not
    // killed), and their requests stop counting: the idle CPU budget ends both.
    for (const { id } of [late, early]) {
      assert.match(
        await ended(node, id, 1, 25_000),
        /more CPU than its budget while serving no request/,
      );
    }
    assert.equal((await container(node, calm.id)).restarts, 0, "the sibling went on");
    assert.equal(await (await fetch(`${calmUrl}/`)).text(), "up");
  });
}

Deno.test("a request that never settles stops counting in flight once the node aborts it", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const env = { "MCM.MAX_EXECUTION_TIME_SEC": "4" };
  const { container: hanger, url } = await deployScript(node, "hanger", POISON_SERVICE, env, "eve");
  const began = Date.now();
  // The node gives up on it after 4 s (504); its handler never settles, and it burns on.
  const hung = await fetch(`${url}/hang`);
  await hung.body?.cancel();
  assert.equal(hung.status, 504);
  assert.match(
    await ended(node, hanger.id, 1, 20_000),
    /more CPU than its budget while serving no request/,
  );
  assert.ok(Date.now() - began < 25_000, `ended in ${Date.now() - began} ms`);
});

Deno.test("stack traces name the microservice's file, never the node's data directory", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const data = node.dataDir;
  const script = STACK_SERVICE.replace("__FAIL_AT_LOAD__", "false");
  const { container: svc, url } = await deployScript(node, "stacks", script);
  const stack = await (await fetch(`${url}/stack`)).text();
  assert.match(stack, /microservice:\/api-stacks\/index\.js:\d+:\d+/, stack);
  assert.ok(!stack.includes(data) && !stack.includes("file://"), `a path in: ${stack}`);
  assert.equal((await fetch(`${url}/fail`)).status, 500);
  await waitFor(
    async () => {
      const logs = await (await mcm(node, `/containers/${svc.id}/logs`)).text();
      return logs.includes("failing on purpose");
    },
    "the failure logged",
    10_000,
  );
  const logs = await (await mcm(node, `/containers/${svc.id}/logs`)).text();
  assert.ok(!logs.includes(data) && !logs.includes("file://"), `a path in the log: ${logs}`);
  assert.match(logs, /microservice:\/api-stacks\/index\.js/);
  await uploadImage(
    node,
    await scriptImage(STACK_SERVICE.replace("__FAIL_AT_LOAD__", "true")),
    "broken.tar",
  );
  const refused = await postContainer(node, { name: "broken", image: "broken" });
  const text = await refused.text();
  assert.equal(refused.status, 422, text);
  assert.match(text, /failing at load/);
  assert.ok(!text.includes(data) && !text.includes("file://"), `a path in: ${text}`);
});
