/**
 * A node's microservices across the LAN: two real nodes on loopback in a private mDNS group.
 * A deploy or a removal on B shows in A's linkLocal listing within seconds (B's `svc` TXT key
 * changes, so A verifies B again), a burst of deploys stays within the mDNS rate rules, and a
 * microservice on A written the way the reference's agent (mai-v1) is finds B's microservice
 * by its `<clientId>-<name>` service type in the decrypted listing and streams its answer.
 */
import assert from "node:assert/strict";
import type dnsPacket from "dns-packet";
import { cliToken, makeIssuer, rpc } from "../testing/identity.ts";
import { deployScript, mcm } from "../testing/mcm.ts";
import {
  linkLocalNodes,
  nodeIdOf,
  openMdnsClient,
  randomMdnsPort,
  startMeshNode,
} from "../testing/mesh.ts";
import { type TestNode, waitFor, withTempDir } from "../testing/node.ts";
import { AGENT_STYLE, SCRIPTED_MILM } from "./helpers/reference_style_mims.ts";

/** The reference's clients are UUIDs; agents take a service type's first 36 characters. */
const CLIENT = "0b6c4a2e-6f4b-4d4e-9a51-3c2f1e0d9b8a";
/** Long announce intervals: only a change of B's TXT can make A look at B again in time. */
const QUIET = { announceSeconds: 30 };
/** How soon A must list B's change (the change is announced within a second; a loaded CI). */
const BOUND_MS = 5000;

const HELLO = `mimikModule.exports = function (context, req, res) { res.end('hi'); };`;

/** The service types A lists for node `id` ([] when A does not list it). */
async function servicesSeen(a: TestNode, id: string): Promise<string[]> {
  const node = (await linkLocalNodes(a)).find((n: { id: string }) => n.id === id);
  return (node?.services ?? []).map((s: { serviceType: string }) => s.serviceType).sort();
}

/** Waits until `a` lists these service types for `id`; returns how long it took. */
async function seenWithin(a: TestNode, id: string, want: string[], what: string) {
  const started = Date.now();
  const expected = JSON.stringify([...want].sort());
  await waitFor(
    async () => JSON.stringify(await servicesSeen(a, id)) === expected,
    `${what} (A lists ${JSON.stringify(await servicesSeen(a, id))})`,
    BOUND_MS,
  );
  return Date.now() - started;
}

/** Starts A and B in a new group and waits until A lists B; runs `test`. */
async function withPair(
  test: (a: TestNode, b: TestNode, bId: string, port: number) => Promise<void>,
  extraA: Parameters<typeof startMeshNode>[1] = {},
) {
  const port = randomMdnsPort();
  await using a = await startMeshNode(port, { name: "a", ...QUIET, ...extraA });
  await using b = await startMeshNode(port, { name: "b", ...QUIET });
  const bId = await nodeIdOf(b);
  await waitFor(
    async () => (await linkLocalNodes(a)).some((n: { id: string }) => n.id === bId),
    "A to list B",
  );
  // B's three start-up announcements (0, 1 and 2 s) are over: from now on only a change of B
  // makes B announce before its 30 s interval.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  await test(a, b, bId, port);
}

Deno.test("a deploy and a removal on B show in A's linkLocal listing within seconds", () =>
  withPair(async (a, b, bId) => {
    assert.deepEqual(await servicesSeen(a, bId), [], "B has no microservice yet");
    await deployScript(b, "hello", HELLO, {}, CLIENT);
    const shown = await seenWithin(a, bId, [`${CLIENT}-hello`], "A to list B's new service");
    console.log(`mesh_services_test: A listed B's deploy after ${shown} ms`);

    const removed = await mcm(b, `/containers/${CLIENT}-hello`, {
      method: "DELETE",
      headers: { "x-client-id": CLIENT },
    });
    assert.equal(removed.status, 200, await removed.text());
    const gone = await seenWithin(a, bId, [], "A to drop B's removed service");
    console.log(`mesh_services_test: A dropped B's removal after ${gone} ms`);
  }));

/** Whether an mDNS response carries B's TXT record (an announcement or an answer of B's). */
function fromB(packet: dnsPacket.Packet, bId: string): boolean {
  return packet.type === "response" &&
    [...(packet.answers ?? []), ...(packet.additionals ?? [])].some((record) =>
      record.type === "TXT" &&
      (record.data as (Uint8Array | string)[]).some((item) =>
        (typeof item === "string" ? item : new TextDecoder().decode(item)) === `id=${bId}`
      )
    );
}

Deno.test("a burst of deploys and removals on B: one announcement a second at most, A lists the result", () =>
  withPair(async (a, b, bId, port) => {
    const group = await openMdnsClient(port, true);
    // When each packet arrived, to 20 ms or so (enough for a rule of a second).
    const arrivals: number[] = [];
    const clock = setInterval(() => {
      while (arrivals.length < group.packets.length) arrivals.push(Date.now());
    }, 20);
    try {
      const first = group.packets.length;
      const names = Array.from({ length: 8 }, (_, i) => `burst${i}`);
      const started = Date.now();
      // Deploys and removals as fast as the node takes them: a caller's flood.
      for (const name of names) await deployScript(b, name, HELLO, {}, CLIENT);
      for (const name of names.slice(0, 4)) {
        const removed = await mcm(b, `/containers/${CLIENT}-${name}`, {
          method: "DELETE",
          headers: { "x-client-id": CLIENT },
        });
        assert.equal(removed.status, 200, await removed.text());
      }
      const left = names.slice(4).map((name) => `${CLIENT}-${name}`);
      await seenWithin(a, bId, left, "A to list what the burst left on B");
      const elapsed = Date.now() - started;
      await new Promise((resolve) => setTimeout(resolve, 100));
      const times = group.packets.map((p, i) => ({ ...p, at: arrivals[i] ?? Date.now() }))
        .slice(first)
        .filter(({ packet }) => fromB(packet, bId))
        .map(({ at }) => at);
      assert.ok(times.length >= 1, "B announced its change");
      assert.ok(
        times.length <= Math.ceil(elapsed / 1000) + 1,
        `${times.length} announcements of B in ${elapsed} ms`,
      );
      for (let i = 1; i < times.length; i++) {
        // 1000 ms apart when sent; 700: the arrival clock is a timer, late on a loaded machine.
        assert.ok(
          times[i] - times[i - 1] >= 700,
          `announcements ${times[i] - times[i - 1]} ms apart`,
        );
      }
      console.log(
        `mesh_services_test: 12 changes in ${elapsed} ms, ${times.length} announcements of B`,
      );
    } finally {
      clearInterval(clock);
      await group.close();
    }
  }));

Deno.test("an agent-style microservice on A finds B's microservice by <clientId>-<name> and streams its answer", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    // A calls B on loopback: in a test both nodes are 127.0.0.1.
    const loopback = { mcm: { outboundNetworks: ["public", "private", "loopback"] } };
    await withPair(async (a, b, bId) => {
      await rpc(a, "associateAccount", [
        await cliToken(issuer, "acct-1", "edge:account:associate"),
      ]);
      const token = await cliToken(issuer, "acct-1", "edge:clusters");
      const agent = await deployScript(a, "mai-v1", AGENT_STYLE, {
        EDGE_ACCESS_TOKEN: token,
        API_KEY: "1234",
      }, CLIENT);
      assert.equal(agent.container.id, `${CLIENT}-mai-v1`);
      const headers = { "content-type": "application/json", authorization: "Bearer 1234" };
      /** Declares collection `id` of one prompt, served at `url`. */
      const collect = async (id: string, url: string) => {
        const prompts = [{ url, model: "any", apikey: "Bearer 1234", required: true }];
        const declared = await fetch(`${agent.url}/models`, {
          method: "POST",
          headers,
          body: JSON.stringify({ id, object: "model", modelfile: { prompts } }),
        });
        assert.equal(declared.status, 201, await declared.text());
      };
      await collect("b", `${bId}@mmesh/${CLIENT}/milm/v1/chat/completions`);
      await collect("nobody", `${"0".repeat(56)}@mmesh/x/y`);
      const ask = (content: string, model = "b") =>
        fetch(`${agent.url}/chat/completions`, {
          method: "POST",
          headers,
          body: JSON.stringify({ model, messages: [{ role: "user", content }], stream: true }),
        });

      const missing = await ask("before");
      assert.equal(missing.status, 404);
      assert.match((await missing.json()).message, /Cannot find mim service on node/);

      await deployScript(b, "milm-v1", SCRIPTED_MILM, { "MCM.BASE_API_PATH": "/milm/v1" }, CLIENT);
      await seenWithin(a, bId, [`${CLIENT}-milm-v1`], "A to list B's milm-v1");

      const answer = await ask("hello B");
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get("x-peer-os"), Deno.build.os, "characteristics carry os");
      const arrivals: { at: number; text: string }[] = [];
      const decoder = new TextDecoder();
      for await (const chunk of answer.body!) {
        arrivals.push({ at: Date.now(), text: decoder.decode(chunk, { stream: true }) });
      }
      const text = arrivals.map((a) => a.text).join("");
      const events = text.split("\n\n").filter(Boolean).map((e) => e.replace(/^data: /, ""));
      assert.equal(events.pop(), "[DONE]");
      assert.deepEqual(events.map((e) => JSON.parse(e)), [
        { node: bId, asked: "hello B", trace: null, part: "one" },
        { node: bId, asked: "hello B", trace: null, part: "two" },
        { node: bId, asked: "hello B", trace: null, part: "three" },
      ]);
      // Streamed: the first part came well before the last was written (600 ms later).
      const firstAt = arrivals.find((a) => a.text.includes('"one"'))!.at;
      const lastAt = arrivals.find((a) => a.text.includes('"three"'))!.at;
      assert.ok(lastAt - firstAt >= 300, `parts arrived ${lastAt - firstAt} ms apart`);

      const unknown = await ask("anyone?", "nobody");
      assert.equal(unknown.status, 404);
      assert.match((await unknown.json()).message, /Cannot find node/);
    }, { args: ["--trust", issuer.trustFile], config: loopback });
  }));
