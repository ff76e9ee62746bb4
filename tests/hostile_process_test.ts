/**
 * Issue 34, a client's shared process (mcm.containerProcess `per-client`) brought down by one of
 * its containers: the node names that container from its own records, never a bystander; a
 * sibling's restart is not counted as its own failure; a container that brings its process
 * down twice runs in a process of its own from then on, so its siblings keep their state.
 */
import assert from "node:assert/strict";
import { containerProcesses, storagePathOf } from "../testing/container_processes.ts";
import { type Container, ContainerSchema } from "../gen/mcm/validators.ts";
import { expectJson } from "../testing/contract.ts";
import { deployScript, mcm, serviceUrl } from "../testing/mcm.ts";
import { startTestNode, type TestNode, waitFor, withTempDir } from "../testing/node.ts";
import { hits, logText, record, settled } from "./helpers/hostile_process_records.ts";

const CONFIG = { apiKey: "a-test-key-of-enough-length", discovery: { mdns: false } };

/**
 * Counts its requests in memory (its state: lost when its process dies); /blow fills its heap
 * in one synchronous loop: V8 aborts the whole process on the heap limit before any watchdog
 * can end the worker.
 */
const SERVICE = `var hits = 0;
mimikModule.exports = function (context, req, res) {
  if (req.url === "/blow") { var kept = []; for (var i = 0; ; i++) kept.push({ i: i, s: "x" + i }); }
  hits++;
  res.end(JSON.stringify({ hits: hits }));
};`;

/** Sends /blow: the request fails with the process it brought down. */
async function blow(url: string): Promise<void> {
  const response = await fetch(`${url}/blow`);
  await response.body?.cancel();
  assert.equal(response.status, 502, "the request ends with its process");
}

/** Whether the container `id` runs in a process of its own (its storage in its flags). */
async function inOwnProcess(node: TestNode, id: string): Promise<boolean> {
  const storage = storagePathOf(node.dataDir, id);
  return (await containerProcesses(node.dataDir)).some((process) =>
    !process.group && process.storage === storage
  );
}

Deno.test("a container that brings down its client's process is named, then moved out", async () => {
  await withTempDir(async (dataDir) => {
    const node = await startTestNode({ dataDir, config: CONFIG });
    try {
      await namedThenMovedOut(node);
    } finally {
      await node.stop();
    }
    // The quarantine outlives a node restart: only a redeploy ends it.
    await using again = await startTestNode({ dataDir, config: CONFIG });
    const bad = await settled(again, "alice-bad", (c) => c.quarantined === true);
    assert.equal(bad.processEnds, undefined, "counted since the node started it");
    await waitFor(() => inOwnProcess(again, bad.id), "a process of its own again", 15_000);
    await redeployShares(again, bad);
  });
});

/** Three attempts of `bad` beside `calm`: named twice, then alone the third time. */
async function namedThenMovedOut(node: TestNode): Promise<void> {
  const env = { "MCM.MEMORY_MB": "64" };
  const bad = await deployScript(node, "bad", SERVICE, env, "alice");
  const calm = await deployScript(node, "calm", SERVICE, env, "alice");
  const badId = bad.container.id;
  const calmId = calm.container.id;

  for (const round of [1, 2]) {
    assert.equal(await hits(calm.url), 1, `round ${round}: the sibling starts afresh`);
    assert.equal(await hits(calm.url), 2);
    await blow(bad.url);
    const culprit = await settled(node, badId, (c) => (c.processEnds ?? 0) >= round);
    const sibling = await settled(node, calmId, (c) => (c.bystanderRestarts ?? 0) >= round);
    assert.match(culprit.lastError ?? "", /brought down its client's process/);
    assert.match(culprit.lastError ?? "", /V8 ran out of heap memory/);
    assert.equal(culprit.processEnds, round);
    assert.match(
      sibling.lastError ?? "",
      new RegExp(`restarted because container ${badId} brought down`),
    );
    assert.doesNotMatch(sibling.lastError ?? "", /this container was the one growing|CPU budget/);
    assert.equal(sibling.restarts, 0, "a sibling's crash is not counted as its own");
    assert.equal(sibling.bystanderRestarts, round);
    assert.equal(sibling.processEnds, undefined, "the sibling brought nothing down");
    assert.equal(culprit.quarantined, round === 2 ? true : undefined);
    assert.doesNotMatch(await logText(node, calmId), /Fatal JavaScript|heap limit/);
    assert.match(await logText(node, badId), /Fatal JavaScript out of memory/);
    assert.doesNotMatch(await logText(node, badId), /C stack trace|\(\+0x[0-9a-f]+\)/);
  }

  // The second time moved it to a process of its own: its third attempt ends that process only.
  await waitFor(() => inOwnProcess(node, badId), "the culprit in a process of its own", 15_000);
  assert.equal(await hits(calm.url), 1);
  assert.equal(await hits(calm.url), 2);
  assert.equal((await record(node, badId)).quarantined, true);
  await blow(bad.url);
  const culprit = await settled(node, badId, (c) => c.restarts >= 3);
  assert.match(culprit.lastError ?? "", /out of memory \(MCM.MEMORY_MB 64 MB\)/);
  assert.equal(culprit.processEnds, 2, "its own process is not its client's");
  assert.equal(await hits(calm.url), 3, "the sibling's state survived the culprit's third end");
  const sibling = await record(node, calmId);
  assert.equal(sibling.bystanderRestarts, 2);
  assert.equal(sibling.restarts, 0);
  assert.equal(sibling.state, "started");
}

/** A redeploy is a new deployment: it shares its client's process again, its record afresh. */
async function redeployShares(node: TestNode, bad: Container): Promise<void> {
  const env = { "MCM.MEMORY_MB": "64" };
  const redeployed = await mcm(node, "/containers", {
    method: "POST",
    headers: { "x-client-id": "alice", "content-type": "application/json" },
    body: JSON.stringify({ name: "bad", image: "bad", env }),
  });
  const again = await expectJson(redeployed, 200, ContainerSchema);
  assert.equal(again.quarantined, undefined);
  assert.equal(again.processEnds, undefined);
  await waitFor(async () => !(await inOwnProcess(node, bad.id)), "its own process's end", 15_000);
  assert.equal(await hits(serviceUrl(node, again)), 1);
}

Deno.test("a kill from outside blames no container: each end counts as its own", async () => {
  await using node = await startTestNode({ config: CONFIG });
  const one = await deployScript(node, "one", SERVICE, {}, "alice");
  const two = await deployScript(node, "two", SERVICE, {}, "alice");
  assert.equal(await hits(one.url), 1);
  assert.equal(await hits(two.url), 1);
  const [shared] = (await containerProcesses(node.dataDir)).filter((p) => p.group && !p.spare);
  assert.ok(shared, "the client's process");
  Deno.kill(shared.pid, "SIGKILL");
  for (const { container } of [one, two]) {
    const now = await settled(node, container.id, (c) => c.restarts >= 1);
    assert.equal(now.bystanderRestarts, undefined, `${container.id}: no one to blame`);
    assert.equal(now.processEnds, undefined);
    assert.doesNotMatch(now.lastError ?? "", /brought down/);
  }
});

Deno.test("a container's record shows its memory, CPU and outbound requests in flight", async () => {
  // A server that accepts and never answers: the container's requests stay in flight.
  const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of silent) held.push(conn);
  })();
  try {
    await using node = await startTestNode({
      config: { ...CONFIG, mcm: { outboundNetworks: ["public", "private", "loopback"] } },
    });
    const script = `var kept = new Uint8Array(24 * 1024 * 1024).fill(1);
mimikModule.exports = function (context, req, res) {
  for (var i = 0; i < 3; i++) fetch("http://127.0.0.1:${silent.addr.port}/").catch(function () {});
  res.end(String(kept.length));
};`;
    const { container, url } = await deployScript(node, "heavy", script, {}, "alice");
    const response = await fetch(`${url}/`);
    assert.equal(response.status, 200, await response.text());
    let seen: Container | undefined;
    await waitFor(
      async () => {
        seen = await record(node, container.id);
        return (seen.usage?.memoryBytes ?? 0) >= 24 * 2 ** 20 && seen.usage?.outboundInFlight === 3;
      },
      "its figures in its record",
      10_000,
    ).catch((error) => {
      throw new Error(`${error.message}: ${JSON.stringify(seen?.usage)}`);
    });
    assert.ok(seen!.usage!.cpuMicros >= 0);
    assert.ok(Math.abs(Date.now() - seen!.usage!.at) < 5_000, "recent figures");
  } finally {
    silent.close();
    for (const conn of held) conn.close();
    await accepting.catch(() => {});
  }
});
