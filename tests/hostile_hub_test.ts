/**
 * Issue 34, the hub's part of item 8, tried as a hostile client would with real hubs, nats-server
 * and nodes: the hubs' forwarding marks (`x-edge-hub-forward`, `x-edge-hub-client`) never reach a
 * node's microservice, whether a peer hub set them or a client forged them; a mark captured
 * between two hubs is refused with another caller's Authorization; and a cluster key without
 * randomness (all zero bytes, a word repeated, a counting sequence) stops `edgenode hub` with a
 * message saying how to make a good one.
 */
import assert from "node:assert/strict";
import { type HubNode, infoOf, joinHub, startTestHub } from "../testing/hub.ts";
import { clusterUp, startCluster, type TestCluster } from "../testing/hub_cluster.ts";
import { startHubRelay } from "./helpers/hostile_hub_relay.ts";
import { cliToken, makeIssuer, type TestIssuer } from "../testing/identity.ts";
import { deployScript } from "../testing/mcm.ts";
import { LAUNCHER_PERMISSIONS, MAIN, withTempDir } from "../testing/node.ts";

const MARKS = ["x-edge-hub-forward", "x-edge-hub-client"];

/** A microservice that answers with the headers it was given. */
const ECHO = `mimikModule.exports = function (context, req, res) {
  res.end(JSON.stringify(req.headers));
};`;

/** Deploys ECHO on `target`'s node; returns a fetch of it through `hub` as `token`'s caller. */
async function echoThrough(target: HubNode) {
  const { container } = await deployScript(target.node, "echo", ECHO);
  const path = `${container.env["MCM.BASE_API_PATH"]}/`;
  const sep = (await infoOf(target.node, "sep")).sep;
  return {
    path,
    sepHeaders: sep.headers as Record<string, string>,
    via: (hub: { url: string }, token: string, headers: Record<string, string> = {}) =>
      fetch(`${hub.url}${path}`, {
        headers: { ...sep.headers, Authorization: `Bearer ${token}`, ...headers },
      }),
  };
}

/** The headers the echo saw (asserting 200), with lower-case names. */
async function echoed(response: Response): Promise<Record<string, string>> {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const headers = JSON.parse(text);
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), `${v}`]));
}

function assertNoMarks(headers: Record<string, string>, what: string) {
  assert.equal(headers["x-edge-via"], "hub", `${what}: the echo answers through the hub`);
  for (const mark of MARKS) {
    assert.equal(headers[mark], undefined, `${what}: the microservice saw ${mark}`);
  }
}

async function withIssuer(run: (issuer: TestIssuer, dir: string) => Promise<void>) {
  await withTempDir(async (dir) => run(await makeIssuer(`${dir}/issuer`), dir));
}

Deno.test("hostile hub: a peer hub's marks never reach the node's microservice", () =>
  withIssuer(async (issuer, dir) => {
    const cluster = await startCluster(issuer, dir, 2);
    if ("skip" in cluster) return console.log(`skipped: ${cluster.skip}`);
    await using _cluster: TestCluster = cluster;
    const [h1, h2] = cluster.hubs;
    const a2 = await joinHub(h2.url, issuer, "acct-a", { name: "a2" });
    try {
      const echo = await echoThrough(a2);
      // sent to hub 1, which forwards it to hub 2 with its signed marks
      assertNoMarks(await echoed(await echo.via(h1, a2.token)), "forwarded by a peer hub");
      // and to hub 2 with a client address of the caller's choosing
      const forged = await echo.via(h2, a2.token, { "x-edge-hub-client": "203.0.113.9" });
      assertNoMarks(await echoed(forged), "a client's x-edge-hub-client, in a cluster");
    } finally {
      await a2.node.stop();
    }
  }));

Deno.test("hostile hub: a client's marks never reach a microservice; its own mark is 403", () =>
  withIssuer(async (issuer, dir) => {
    // a lone hub, without NATS: a client can still send the marks' names
    const hub = await startTestHub(issuer, `${dir}/hub`);
    const a1 = await joinHub(hub.url, issuer, "acct-a", { name: "a1" });
    try {
      const echo = await echoThrough(a1);
      const forged = await echoed(
        await echo.via(hub, a1.token, { "x-edge-hub-client": "203.0.113.9" }),
      );
      assertNoMarks(forged, "a client's x-edge-hub-client");
      assert.notEqual(forged["x-edge-forwarded-for"], "203.0.113.9", "the forged address is used");
      const marked = await echo.via(hub, a1.token, {
        "x-edge-hub-forward": `${"0".repeat(32)}.${Date.now()}.AAAA`,
        "x-edge-hub-client": "203.0.113.9",
      });
      assert.equal(marked.status, 403);
      assert.match((await marked.json()).message, /not signed by a hub of this cluster/);
    } finally {
      await a1.node.stop();
      await hub.stop();
    }
  }));

Deno.test("hostile hub: a captured mark replayed with another caller's Authorization is 403", () =>
  withIssuer(async (issuer, dir) => {
    const cluster = await startCluster(issuer, dir, 1);
    if ("skip" in cluster) return console.log(`skipped: ${cluster.skip}`);
    await using _cluster: TestCluster = cluster;
    const [h1] = cluster.hubs;
    // hub 2 is reached by hub 1 through a relay that keeps what passes
    await using relay = startHubRelay();
    const nats = cluster.hubConfig.nats as Record<string, unknown>;
    const h2 = await startTestHub(issuer, `${dir}/hub2`, {
      config: { ...cluster.hubConfig, nats: { ...nats, advertiseUrl: relay.url } },
    });
    relay.target = h2.url;
    const a2 = await joinHub(h2.url, issuer, "acct-a", { name: "a2" });
    try {
      await Promise.all([clusterUp(h1, 1), clusterUp(h2, 1)]);
      const echo = await echoThrough(a2);
      const first = await echo.via(h1, a2.token);
      assert.equal(first.status, 200, await first.text());
      const captured = relay.seen.find((head) => head.headers.has(MARKS[0]));
      assert.ok(captured, `hub 1 forwarded through the relay (saw ${relay.seen.length})`);
      const marks = Object.fromEntries(MARKS.map((name) => [name, captured.headers.get(name)!]));
      const replay = (authorization: string, path = echo.path) =>
        fetch(`${h2.url}${path}`, {
          headers: { ...echo.sepHeaders, ...marks, Authorization: authorization },
        });

      // another caller of the same account, with a token of its own, replays the mark
      const other = await cliToken(issuer, "acct-a", "edge:clusters");
      const swapped = await replay(`Bearer ${other}`);
      assert.equal(swapped.status, 403, `the swapped Authorization was served: ${swapped.status}`);
      assert.match((await swapped.json()).message, /not signed by a hub of this cluster/);
      // nor for another path, with the caller's own token
      const moved = await replay(`Bearer ${a2.token}`, "/mds/v1/nodes?ping=true");
      assert.equal(moved.status, 403, await moved.text());
      // the control: the capture itself is a valid mark (within its minute, same caller)
      const same = await replay(`Bearer ${a2.token}`);
      assert.equal(same.status, 200, await same.text());
    } finally {
      await a2.node.stop();
      await h2.stop();
    }
  }));

/** `edgenode hub ARGS`; its exit code and stderr, or code undefined when still up after `ms`. */
async function hubRun(args: string[], ms = 20_000) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...LAUNCHER_PERMISSIONS, MAIN, "hub", ...args],
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let running = false;
  const timer = setTimeout(() => {
    running = true;
    child.kill("SIGTERM");
  }, ms);
  const done = await child.output().finally(() => clearTimeout(timer));
  return {
    code: running ? undefined : done.code,
    stderr: new TextDecoder().decode(done.stderr),
  };
}

Deno.test("hostile hub: a cluster key without randomness stops the hub with how to make one", () =>
  withIssuer(async (issuer, dir) => {
    await Deno.mkdir(`${dir}/hub`);
    const keyFile = `${dir}/hub/cluster.key`;
    // No NATS server is needed: the key is checked before the hub starts.
    const args = ["--data-dir", `${dir}/hub`, "--trust", issuer.trustFile, "--port", "0"];
    const weak: [string, Uint8Array, RegExp][] = [
      ["all zero", new Uint8Array(32), /is 32 times the byte 0x00, not random/],
      ["a word repeated", new TextEncoder().encode("secret".repeat(6)), /bits of randomness/],
      ["counting", Uint8Array.from({ length: 48 }, (_, n) => n), /counting sequence/],
    ];
    for (const [what, key, reason] of weak) {
      await Deno.writeFile(keyFile, key, { mode: 0o600 });
      const run = await hubRun([...args, "--nats", "nats://127.0.0.1:1"]);
      assert.notEqual(run.code, undefined, `${what}: the hub started with that key`);
      assert.notEqual(run.code, 0, `${what}: ${run.stderr}`);
      assert.match(run.stderr, /the cluster key .*cluster\.key /, what);
      assert.match(run.stderr, reason, what);
      assert.match(run.stderr, /head -c 32 \/dev\/urandom > cluster\.key; chmod 600/, what);
      assert.doesNotMatch(run.stderr, /\n\s+at /, `${what}: a stack trace`);
    }
  }));
