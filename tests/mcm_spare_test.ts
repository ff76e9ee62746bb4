/**
 * Warm spares (mcm.spareContainers) of processes of one container each (mcm.containerProcess
 * `per-container`): a node keeps none until its first container; then a
 * deploy, a redeploy and a restart take a container process started ahead; a spare's
 * permissions name no container's files until it is taken, and then it opens only that
 * container's; a data dir whose path a file URL escapes works; a spare that dies before its
 * container loaded (stopped when taken, then killed) is followed by a process of the
 * container's own; a container the spare cannot serve (another
 * MCM.MEMORY_MB) starts cold; 0 turns spares off; no spare outlives its node.
 */
import assert from "node:assert/strict";
import {
  alive,
  containerProcesses,
  newSpare,
  openFiles,
  storagePathOf,
} from "../testing/container_processes.ts";
import { mcm, scriptImage, serviceUrl, startContainer, uploadImage } from "../testing/mcm.ts";
import { startTestNode, type TestNode, waitFor } from "../testing/node.ts";

/** Spares as processes of one container each (per client: mcm_client_process_test.ts). */
const CONFIG = {
  apiKey: "a-test-key-of-enough-length",
  discovery: { mdns: false },
  mcm: { containerProcess: "per-container" },
};

/** Counts its visits in its own storage. */
const COUNTER = `mimikModule.exports = function (context, req, res) {
  var visits = Number(context.storage.getItem("visits") || 0) + 1;
  context.storage.setItem("visits", String(visits));
  res.end(JSON.stringify({ visits: visits }));
};`;

async function visits(node: TestNode, container: { env: Record<string, string> }) {
  const response = await fetch(`${serviceUrl(node, container)}/`);
  assert.equal(response.status, 200);
  return (await response.json()).visits;
}

/** The node's "started in" lines of a container. */
async function starts(node: TestNode, name: string): Promise<string[]> {
  const body = await (await mcm(node, `/containers/${name}/logs`)).json();
  return body.data.map((line: { message: string }) => line.message)
    .filter((message: string) => message.startsWith("started in"));
}

/** Deploys the node's first container, which starts cold (no spare runs before it). */
async function firstContainer(node: TestNode): Promise<void> {
  const first = await startContainer(node, { name: "first", image: "counter" });
  assert.equal(await visits(node, first), 1);
  assert.match((await starts(node, "first"))[0], /^started in \d+ ms$/);
}

Deno.test("a node keeps no spare until its first container, nor after a restart without", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "edgenode-spare-" });
  try {
    {
      await using node = await startTestNode({ dataDir, config: CONFIG });
      await uploadImage(node, await scriptImage(COUNTER), "counter.tar");
      await new Promise((resolve) => setTimeout(resolve, 700));
      assert.deepEqual(await containerProcesses(dataDir), []);
      await firstContainer(node);
      await newSpare(dataDir);
    }
    // Restored at the start, a container brings the spares back.
    {
      await using node = await startTestNode({ dataDir, config: CONFIG });
      await newSpare(dataDir);
      assert.equal((await mcm(node, "/containers/first", { method: "DELETE" })).status, 200);
    }
    {
      await using _node = await startTestNode({ dataDir, config: CONFIG });
      await new Promise((resolve) => setTimeout(resolve, 700));
      assert.deepEqual(await containerProcesses(dataDir), []);
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("a deploy takes the warm spare, which opens only that container's files", async () => {
  await using node = await startTestNode({ config: CONFIG });
  await uploadImage(node, await scriptImage(COUNTER), "counter.tar");
  await firstContainer(node);
  const first = await newSpare(node.dataDir);
  // Waiting, a spare's permissions name no container's files: only the folders of all, which
  // its host narrows to one container's when it is taken.
  assert.doesNotMatch(first.cmdline, /\/mcm\/storage\/[0-9a-f]|\/mcm\/bundles\/[0-9a-f]/);

  const a = await startContainer(node, { name: "a", image: "counter" });
  assert.equal(await visits(node, a), 1);
  assert.match((await starts(node, "a"))[0], /^started in \d+ ms \(a warm spare\)$/);
  const second = await newSpare(node.dataDir, [first.pid]);
  const b = await startContainer(node, { name: "b", image: "counter" });
  assert.equal(await visits(node, b), 1);
  assert.equal(await visits(node, a), 2);
  assert.match((await starts(node, "b"))[0], /\(a warm spare\)$/);

  // Each spare opened its own container's storage, and nothing of the other's (nor of first's).
  const aStorage = storagePathOf(node.dataDir, "api-a");
  const bStorage = storagePathOf(node.dataDir, "api-b");
  const aFiles = (await openFiles(first.pid)).filter((f) => f.includes("/mcm/"));
  const bFiles = (await openFiles(second.pid)).filter((f) => f.includes("/mcm/"));
  assert.ok(aFiles.some((f) => f.startsWith(`${aStorage}/storage.db`)), aFiles.join());
  assert.ok(bFiles.some((f) => f.startsWith(`${bStorage}/storage.db`)), bFiles.join());
  assert.ok(aFiles.every((f) => f.startsWith(`${aStorage}/`)), aFiles.join());
  assert.ok(bFiles.every((f) => f.startsWith(`${bStorage}/`)), bFiles.join());

  // A redeploy and a restart after a crash take spares too; the storage stays the container's.
  const third = await newSpare(node.dataDir, [first.pid, second.pid]);
  const again = await startContainer(node, { name: "a", image: "counter" }, 200);
  assert.equal(await visits(node, again), 3);
  // (A redeploy's process has a log of its own.)
  assert.match((await starts(node, "a"))[0], /\(a warm spare\)$/);
  await waitFor(async () => !(await alive(first.pid)), "the old process's end");
  await newSpare(node.dataDir, [first.pid, second.pid, third.pid]);
  Deno.kill(third.pid, "SIGKILL");
  await waitFor(async () => (await starts(node, "a")).length === 2, "the restart");
  assert.match((await starts(node, "a"))[1], /\(a warm spare\)$/);
  assert.equal(await visits(node, again), 4);
});

Deno.test("a data dir with a space and a non-ASCII character deploys through a spare", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "edgenode spare é-" });
  try {
    await using node = await startTestNode({ dataDir, config: CONFIG });
    await uploadImage(node, await scriptImage(COUNTER), "counter.tar");
    await firstContainer(node);
    const spare = await newSpare(dataDir);
    const a = await startContainer(node, { name: "a", image: "counter" });
    assert.match((await starts(node, "a"))[0], /^started in \d+ ms \(a warm spare\)$/);
    assert.equal(await visits(node, a), 1);
    assert.equal(await visits(node, a), 2);
    assert.ok(await alive(spare.pid));
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("a spare that dies before its container loaded is followed by a cold process", async () => {
  await using node = await startTestNode({ config: CONFIG });
  await uploadImage(node, await scriptImage(COUNTER), "counter.tar");
  await firstContainer(node);
  // A stopped spare is taken (the pool cannot tell) and cannot load what it is given; killed
  // then, it ends before the code loaded, as one that died unseen while waiting does.
  const spare = await newSpare(node.dataDir);
  Deno.kill(spare.pid, "SIGSTOP");
  const deploy = startContainer(node, { name: "c", image: "counter" });
  // The node takes it and writes it the take meanwhile.
  await new Promise((resolve) => setTimeout(resolve, 300));
  Deno.kill(spare.pid, "SIGKILL");
  const container = await deploy;
  assert.equal(await visits(node, container), 1);
  const log = (await (await mcm(node, "/containers/c/logs")).json()).data
    .map((line: { message: string }) => line.message);
  assert.ok(log.some((line: string) => line.startsWith("the warm spare failed")), log.join(" | "));
  // Taken dead, the spare is followed by a process of the container's own.
  assert.match((await starts(node, "c"))[0], /^started in \d+ ms$/);
});

Deno.test("a container the spare cannot serve starts a process of its own, and works", async () => {
  await using node = await startTestNode({ config: CONFIG });
  await uploadImage(node, await scriptImage(COUNTER), "counter.tar");
  await firstContainer(node);
  const spare = await newSpare(node.dataDir);
  const small = await startContainer(node, {
    name: "small",
    image: "counter",
    env: { "MCM.MEMORY_MB": "64" },
  });
  assert.equal(await visits(node, small), 1);
  assert.match((await starts(node, "small"))[0], /^started in \d+ ms$/);
  const processes = await containerProcesses(node.dataDir);
  const own = processes.find((p) => p.storage === storagePathOf(node.dataDir, "api-small"));
  assert.ok(own && !own.spare && /max-old-space-size=64\b/.test(own.cmdline));
  // The spare still waits, for a container it fits.
  assert.ok(processes.some((p) => p.pid === spare.pid));
});

Deno.test("with mcm.spareContainers 0 no spare runs, and containers start cold", async () => {
  await using node = await startTestNode({
    config: { ...CONFIG, mcm: { ...CONFIG.mcm, spareContainers: 0 } },
  });
  await uploadImage(node, await scriptImage(COUNTER), "counter.tar");
  const c = await startContainer(node, { name: "c", image: "counter" });
  assert.equal(await visits(node, c), 1);
  assert.match((await starts(node, "c"))[0], /^started in \d+ ms$/);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const processes = await containerProcesses(node.dataDir);
  assert.equal(processes.length, 1);
  assert.equal(processes[0].spare, false);
});

Deno.test("no spare outlives its node: stopped, or killed", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "edgenode-spare-" });
  try {
    const node = await startTestNode({ dataDir, config: CONFIG });
    await uploadImage(node, await scriptImage(COUNTER), "counter.tar");
    await firstContainer(node);
    const spare = await newSpare(dataDir);
    await node.stop();
    assert.equal(await alive(spare.pid), false);

    // Killed at once, the node cannot stop it: the spare sees its stdin close and ends.
    const killed = await startTestNode({ dataDir, config: CONFIG });
    const orphan = await newSpare(dataDir);
    Deno.kill(killed.pid, "SIGKILL");
    await waitFor(async () => !(await alive(orphan.pid)), "the orphaned spare's end", 5000);
    await killed.stop();
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
