/**
 * One process per client (mcm.containerProcess `per-client`, the default): a client's
 * containers share a process, each in a sandboxed worker; other clients have processes of their
 * own; a spare becomes the process of the next client; what one container does (a runaway
 * loop, memory, a crash of its worker) ends that container only, and a crash of the process
 * reaches that client's containers only; no client's process outlives its node.
 */
import assert from "node:assert/strict";
import { alive, containerProcesses } from "../testing/container_processes.ts";
import { containerRecord, deployScript, mcm } from "../testing/mcm.ts";
import { startTestNode, type TestNode, waitFor } from "../testing/node.ts";

const CONFIG = { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } };

/**
 * Counts visits in its storage; /spin loops for ever, /burn keeps 90% of a core busy after
 * answering, /hoard holds 512 MiB of buffers.
 */
const SERVICE = `var kept = [];
mimikModule.exports = function (context, req, res) {
  if (req.url === "/spin") setTimeout(function () { while (true) {} }, 10);
  if (req.url === "/burn") {
    setInterval(function () { var t = Date.now(); while (Date.now() - t < 45) {} }, 50);
  }
  if (req.url === "/hoard") {
    for (var i = 0; i < 8; i++) { var b = new Uint8Array(64 * 1024 * 1024); b.fill(1); kept.push(b); }
  }
  var visits = Number(context.storage.getItem("visits") || 0) + 1;
  context.storage.setItem("visits", String(visits));
  res.end(JSON.stringify({ visits: visits }));
};`;

/** Deploys SERVICE as image and container `name` for `client`. */
async function deploy(node: TestNode, client: string, name: string, env = {}) {
  const { container, url } = await deployScript(node, name, SERVICE, env, client);
  return { id: container.id, url };
}

async function visits(url: string): Promise<number> {
  const response = await fetch(`${url}/`);
  assert.equal(response.status, 200, `${url}/ answered ${response.status}`);
  return (await response.json()).visits;
}

const container = containerRecord;

/** The node's "started in" lines of a container. */
async function starts(node: TestNode, id: string): Promise<string[]> {
  const body = await (await mcm(node, `/containers/${id}/logs`)).json();
  return body.data.map((line: { message: string }) => line.message)
    .filter((message: string) => message.startsWith("started in"));
}

/** The client processes of the node that host a container now (their storage is open). */
async function hosting(node: TestNode): Promise<number[]> {
  const pids: number[] = [];
  for (const process of await containerProcesses(node.dataDir)) {
    assert.ok(process.group, `a client's process: ${process.cmdline}`);
    const fds = await new Deno.Command("ls", { args: ["-l", `/proc/${process.pid}/fd`] }).output();
    if (new TextDecoder().decode(fds.stdout).includes("storage.db")) pids.push(process.pid);
  }
  return pids;
}

Deno.test("a client's containers share one process; another client's run in another", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const a1 = await deploy(node, "alice", "one");
  const a2 = await deploy(node, "alice", "two");
  const a3 = await deploy(node, "alice", "three");
  const b1 = await deploy(node, "bob", "one");
  for (const service of [a1, a2, a3, b1]) assert.equal(await visits(service.url), 1);
  assert.equal(await visits(a2.url), 2, "each container keeps its own storage");
  assert.equal(await visits(b1.url), 2);
  assert.equal(await visits(a1.url), 2);
  assert.equal((await hosting(node)).length, 2, "one process for alice, one for bob");
  // The second and third of a client start in its running process, without a process start.
  for (const id of [a2.id, a3.id]) {
    assert.match((await starts(node, id))[0], /\(its client's process\)$/);
  }
  // bob's first container took the spare started after alice's first.
  assert.match((await starts(node, b1.id))[0], /\(a warm spare\)$/);
});

Deno.test("a runaway loop, idle CPU or a memory hoard ends its own container, not its client's others", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const hog = await deploy(node, "alice", "hog", { "MCM.MEMORY_MB": "64" });
  const calm = await deploy(node, "alice", "calm", { "MCM.MEMORY_MB": "64" });
  assert.equal(await visits(calm.url), 1);
  const [process] = await hosting(node);
  for (
    const [path, restarts, reason] of [
      ["/spin", 1, /without yielding/],
      ["/burn", 2, /more CPU than its budget while serving no request/],
      ["/hoard", 3, /out of memory \(MCM.MEMORY_MB 64 MB\)/],
    ] as const
  ) {
    await waitFor(async () => (await container(node, hog.id)).state === "started", "up", 10_000);
    const response = await fetch(`${hog.url}${path}`);
    await response.body?.cancel();
    await waitFor(
      async () => (await container(node, hog.id)).restarts >= restarts,
      `${path} ended the container`,
      15_000,
    );
    assert.match((await container(node, hog.id)).lastError ?? "", reason);
    const other = await container(node, calm.id);
    assert.equal(other.restarts, 0, `${path}: the other container went on (${other.lastError})`);
    assert.equal(await visits(calm.url), restarts + 1);
  }
  assert.deepEqual(await hosting(node), [process], "the client's process went on");
  await waitFor(async () => (await container(node, hog.id)).state === "started", "back", 10_000);
  assert.ok(await visits(hog.url) >= 2, "it serves again, with its storage");
});

Deno.test("a crash of a client's process restarts that client's containers only", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const a1 = await deploy(node, "alice", "one");
  const a2 = await deploy(node, "alice", "two");
  const b1 = await deploy(node, "bob", "one");
  for (const service of [a1, a2, b1]) assert.equal(await visits(service.url), 1);
  // Alice's process holds both her containers' storage.
  let pidOfAlice: number | undefined;
  for (const pid of await hosting(node)) {
    const files = await new Deno.Command("ls", { args: ["-l", `/proc/${pid}/fd`] }).output();
    const open = new TextDecoder().decode(files.stdout).match(/storage\.db\n/g) ?? [];
    if (open.length >= 2) pidOfAlice = pid;
  }
  assert.ok(pidOfAlice, "alice's process holds both her storages");
  Deno.kill(pidOfAlice, "SIGKILL");
  for (const id of [a1.id, a2.id]) {
    await waitFor(
      async () => {
        const now = await container(node, id);
        return now.restarts >= 1 && now.state === "started";
      },
      `${id} back`,
      15_000,
    );
  }
  assert.equal((await container(node, b1.id)).restarts, 0, "bob's container went on");
  assert.equal(await visits(b1.url), 2);
  assert.equal(await visits(a1.url), 2);
  assert.equal(await visits(a2.url), 2);
});

Deno.test("a client's process ends with its last container, and with its node", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "edgenode-client-" });
  try {
    const node = await startTestNode({ dataDir, config: CONFIG });
    const a = await deploy(node, "alice", "one");
    assert.equal(await visits(a.url), 1);
    const [process] = await hosting(node);
    assert.equal((await mcm(node, `/containers/${a.id}`, { method: "DELETE" })).status, 200);
    await waitFor(async () => !(await alive(process)), "the empty process's end", 10_000);
    const b = await deploy(node, "alice", "two");
    assert.equal(await visits(b.url), 1);
    const [again] = await hosting(node);
    await node.stop();
    assert.equal(await alive(again), false);
    assert.equal((await containerProcesses(dataDir)).length, 0, "no spare either");
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
