/**
 * Hub cluster figures for `deno task bench` (alone: `deno task bench --only cluster`), with a
 * real nats-server (JetStream) and `edgenode hub --nats` processes (testing/hub_cluster.ts):
 * - a tunnelled request sent to another hub of the cluster (forwarded hub to hub) next to the
 *   same request sent to the node's own hub: small GETs with wrk, a large upload and download
 *   with curl, and the forwarding hub's peak RSS (it must not grow with the size);
 * - the two transports the forwarding could use, raw, between two processes: bodies in NATS
 *   messages (chunks with a window of acknowledgements) and one direct HTTP POST;
 * - 30,000 simulated nodes over three hubs (10,000 each, one hub after another): connect time,
 *   each hub's memory per local connection and per presence entry of the other hubs' nodes, and
 *   nats-server's memory;
 * - a hub SIGKILLed behind HAProxy (deploy/haproxy-hub.cfg): how long until its real nodes are
 *   reachable through the balancer again, and until its simulated nodes are all connected to
 *   the other hubs.
 *
 * `deno run -A scripts/bench/hub_cluster.ts [--part tunnel|transport|scale|failover]
 * [--size-mib N]` runs it (or one part) alone and prints the rows.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { Kvm } from "@nats-io/kv";
import { type HubNode, infoOf, joinHub, startTestHub, type TestHub } from "../../testing/hub.ts";
import { clusterUp, healthOf, startCluster, type TestCluster } from "../../testing/hub_cluster.ts";
import { startBalancer, type TestBalancer } from "../../testing/balancer.ts";
import { cliToken, makeIssuer, type TestIssuer } from "../../testing/identity.ts";
import { startTestNats } from "../../testing/nats.ts";
import { waitFor } from "../../testing/node.ts";
import {
  curlArgs,
  curlUpload,
  makeModelFile,
  median,
  p99,
  peakRssMib,
  rssMib,
  run,
  timed,
  wrk,
} from "./tools.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const PEER = new URL("./hub_cluster_peer.ts", import.meta.url).pathname;
const PING = "/mds/v1/nodes?ping=true";

/** Simulated nodes per hub in the scale row (a hub's default maxConnections). */
const NODES_PER_HUB_WANTED = 10_000;
/** Real nodes behind the balancer in the failover row (each is a node process, ~100 MB). */
const REAL_NODES = 6;
const FAILOVER_ROUNDS = 3;
/** Simulated nodes behind the balancer in the failover row, spread over three hubs. */
const FAILOVER_SIMULATED = 6_000;

/** Sizes of the transfers; by default 64 MiB through the tunnel, 256 MiB for the transports. */
export interface ClusterSizes {
  tunnelMib: number;
  transportMib: number;
}

// ---- child processes -------------------------------------------------------------------------

/** A process of hub_cluster_peer.ts, read line by line (each a JSON record). */
interface Peer {
  pid: number;
  // deno-lint-ignore no-explicit-any
  next(ms?: number): Promise<any>;
  /** Closes its stdin (the peer's signal to finish) and waits for its exit. */
  close(): Promise<void>;
}

function spawnPeer(args: string[]): Peer {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "--allow-net=127.0.0.1",
      "--allow-read",
      "--allow-env",
      "--allow-sys",
      PEER,
      ...args,
    ],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines: string[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  (async () => {
    let buffered = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      let end;
      while ((end = buffered.indexOf("\n")) >= 0) {
        lines.push(buffered.slice(0, end));
        buffered = buffered.slice(end + 1);
      }
      wake?.();
    }
  })().finally(() => {
    ended = true;
    wake?.();
  });
  let closed: Promise<void> | undefined;
  return {
    pid: child.pid,
    async next(ms = 120_000) {
      const deadline = Date.now() + ms;
      while (lines.length === 0) {
        if (ended) throw new Error(`${args[0]} peer ended without a line`);
        if (Date.now() > deadline) throw new Error(`${args[0]} peer: no line in ${ms} ms`);
        const timer = Promise.withResolvers<void>();
        wake = timer.resolve;
        const timeout = setTimeout(timer.resolve, Math.max(0, deadline - Date.now()));
        await timer.promise;
        clearTimeout(timeout);
      }
      return JSON.parse(lines.shift()!);
    },
    close() {
      closed ??= (async () => {
        await child.stdin.close().catch(() => {});
        const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
        await child.status;
        clearTimeout(timer);
      })();
      return closed;
    },
  };
}

/** CPU time a process has used so far, in ms (utime + stime from /proc, 100 ticks a second). */
async function cpuMsOf(pid: number): Promise<number> {
  const stat = await run("cat", [`/proc/${pid}/stat`]);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14 and 15 of stat(5); here counted from field 3 on.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Waits until a process uses under 5 % of a core over half a second (done with its backlog). */
async function idle(pid: number, ms = 120_000): Promise<void> {
  const deadline = Date.now() + ms;
  let before = await cpuMsOf(pid);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = await cpuMsOf(pid);
    if (now - before < 25) return;
    if (Date.now() > deadline) throw new Error(`pid ${pid} still busy after ${ms} ms`);
    before = now;
  }
}

const mbps = (mib: number, seconds: number) => (mib * 1.048576 / seconds).toFixed(0);
const mib = (value: number) => value.toFixed(0);

// ---- 1. a tunnel through two hubs ------------------------------------------------------------

async function tunnelRows(issuer: TestIssuer, dir: string, sizeMib: number): Promise<string[][]> {
  const cluster = await startCluster(issuer, `${dir}/tunnel`, 2);
  if ("skip" in cluster) return [["tunnel through two hubs", "skipped", cluster.skip]];
  await using _cluster = cluster;
  const [forwarding, own] = cluster.hubs;
  const target = await joinHub(own.url, issuer, "bench", { name: "target" });
  try {
    const sep = (await infoOf(target.node, "sep")).sep;
    if (sep.url !== own.url) throw new Error(`the node's sep url ${sep.url} is not ${own.url}`);
    const headers: Record<string, string> = {
      ...sep.headers,
      Authorization: `Bearer ${target.token}`,
    };
    const check = await fetch(`${forwarding.url}${PING}`, { headers });
    if (check.status !== 200) throw new Error(`ping via another hub: ${await check.text()}`);
    await check.body?.cancel();
    const model = async (id: string) => {
      const created = await fetch(`${own.url}/ai/store/v1/models`, {
        method: "POST",
        headers: { ...headers, "Content-Type": "application/json" },
        body: JSON.stringify({ id, version: "1", kind: "llm" }),
      });
      if (created.status !== 201) throw new Error(`create ${id}: ${await created.text()}`);
      await created.body?.cancel();
    };
    for (const id of ["one", "two", "warm"]) await model(id);

    // The forwarding hub's peak RSS: at the start, after a transfer of a quarter of the size,
    // and after the timed transfers of the full size.
    const peakStart = await peakRssMib(forwarding.pid);
    const quarter = Math.max(1, Math.round(sizeMib / 4));
    const warmFile = `${dir}/tunnel-quarter.gguf`;
    await makeModelFile(warmFile, quarter);
    const warm = `${forwarding.url}/ai/store/v1/models/warm`;
    await run("curl", curlArgs(`${warm}/upload`, headers, warmFile));
    await run("curl", curlArgs(`${warm}?alt=media`, headers));
    const peakQuarter = await peakRssMib(forwarding.pid);
    await Deno.remove(warmFile);

    const file = `${dir}/tunnel.gguf`;
    await makeModelFile(file, sizeMib);
    const at = (hub: TestHub, id: string) => `${hub.url}/ai/store/v1/models/${id}`;
    const upOne = await timed("curl", curlArgs(`${at(own, "one")}/upload`, headers, file));
    const upTwo = await timed("curl", curlArgs(`${at(forwarding, "two")}/upload`, headers, file));
    const downOne = await timed("curl", curlArgs(`${at(own, "one")}?alt=media`, headers));
    const downTwo = await timed("curl", curlArgs(`${at(forwarding, "two")}?alt=media`, headers));
    const peakFull = await peakRssMib(forwarding.pid);
    await Deno.remove(file);

    const viaOwn = await wrk(`${own.url}${PING}`, headers);
    const viaOther = await wrk(`${forwarding.url}${PING}`, headers);
    const p99Own = await p99(`${own.url}${PING}`, headers);
    const p99Other = await p99(`${forwarding.url}${PING}`, headers);
    return [
      [
        "GET through two hubs: sent to hub A, forwarded to the node's hub B (wrk -c50, 1 core)",
        `${viaOther} req/s, p99 ${p99Other.toFixed(2)} ms`,
        `sent to the node's own hub: ${viaOwn} req/s, p99 ${p99Own.toFixed(2)} ms`,
      ],
      [
        `upload ${sizeMib} MiB through two hubs (curl -T, median of 3)`,
        `${mbps(sizeMib, upTwo)} MB/s`,
        `through the node's own hub: ${mbps(sizeMib, upOne)} MB/s`,
      ],
      [
        `download ${sizeMib} MiB through two hubs (curl, median of 3)`,
        `${mbps(sizeMib, downTwo)} MB/s`,
        `through the node's own hub: ${mbps(sizeMib, downOne)} MB/s`,
      ],
      [
        "forwarding hub A's peak RSS",
        `${peakStart} MiB at the start, ${peakQuarter} MiB after ${quarter} MiB up and down, ` +
        `${peakFull} MiB after ${sizeMib} MiB up and down 3 times`,
        "must not grow with the size: bodies stream hub to hub (fetch)",
      ],
    ];
  } finally {
    await target.node.stop();
  }
}

// ---- 2. the forwarding transport ---------------------------------------------------------------

/** Transfers per transport; the median counts. */
const TRANSPORT_RUNS = 3;

async function transportRows(dir: string, sizeMib: number): Promise<string[][]> {
  await Deno.mkdir(`${dir}/transport`, { recursive: true });
  const nats = await startTestNats(`${dir}/transport`);
  if ("skip" in nats) return [["forwarding transport", "skipped", nats.skip]];
  await using _nats = nats;
  const credentials = [nats.url, nats.user, nats.passwordFile];

  /** MB/s of one NATS transfer, the CPU (ms) of sender, receiver and nats-server. */
  const natsRun = async (chunkKib: number, window: number) => {
    const subject = `bench.transport.${chunkKib}`;
    const receiver = spawnPeer(["nats-recv", ...credentials, subject]);
    try {
      await receiver.next(30_000);
      const serverCpu = await cpuMsOf(nats.pid);
      const sender = spawnPeer([
        "nats-send",
        ...credentials,
        subject,
        String(sizeMib),
        String(chunkKib),
        String(window),
      ]);
      const sent = await sender.next();
      await sender.close();
      const received = await receiver.next(30_000);
      if (sent.bytes !== sizeMib * 2 ** 20 || received.bytes !== sent.bytes) {
        throw new Error(`NATS transfer: sent ${sent.bytes}, received ${received.bytes}`);
      }
      return {
        mbps: sizeMib * 1.048576 / (sent.ms / 1000),
        cpu: sent.cpuMs + received.cpuMs,
        server: (await cpuMsOf(nats.pid)) - serverCpu,
      };
    } finally {
      await receiver.close();
    }
  };
  const httpRun = async (chunkKib: number) => {
    const receiver = spawnPeer(["http-recv"]);
    try {
      const { port } = await receiver.next(30_000);
      const sender = spawnPeer([
        "http-send",
        `http://127.0.0.1:${port}/`,
        String(sizeMib),
        String(chunkKib),
      ]);
      const sent = await sender.next();
      await sender.close();
      const received = await receiver.next(30_000);
      if (sent.bytes !== sizeMib * 2 ** 20 || received.bytes !== sent.bytes) {
        throw new Error(`HTTP transfer: sent ${sent.bytes}, received ${received.bytes}`);
      }
      return { mbps: sizeMib * 1.048576 / (sent.ms / 1000), cpu: sent.cpuMs + received.cpuMs };
    } finally {
      await receiver.close();
    }
  };

  // The receiving side's own speed: curl streams a file to the same bare receiver.
  const curlRun = async (file: string) => {
    const receiver = spawnPeer(["http-recv"]);
    try {
      const { port } = await receiver.next(30_000);
      const seconds = await timed("curl", curlUpload(`http://127.0.0.1:${port}/`, undefined, file));
      const received = [await receiver.next(), await receiver.next(), await receiver.next()];
      return { mbps: sizeMib * 1.048576 / seconds, cpu: median(received.map((r) => r.cpuMs)) };
    } finally {
      await receiver.close();
    }
  };

  const runs = { nats512: [], nats1024: [], http: [] } as Record<string, {
    mbps: number;
    cpu: number;
    server?: number;
  }[]>;
  // Interleaved, so that a slow moment of the machine does not fall on one transport only.
  for (let i = 0; i < TRANSPORT_RUNS; i++) {
    runs.http.push(await httpRun(512));
    runs.nats512.push(await natsRun(512, 8));
    // 1 MiB: nats-server's default max_payload.
    runs.nats1024.push(await natsRun(1024, 8));
  }
  const file = `${dir}/transport/payload.bin`;
  await makeModelFile(file, sizeMib);
  const curl = await curlRun(file);
  await Deno.remove(file);
  // CPU per GB moved, so that sizes compare.
  const perGb = (ms: number) => (ms / 1000 / (sizeMib * 1.048576 / 1000)).toFixed(1);
  const summary = (key: string) => {
    const m = (field: "mbps" | "cpu" | "server") => median(runs[key].map((r) => r[field] ?? 0));
    return { mbps: m("mbps"), cpu: perGb(m("cpu")), server: perGb(m("server")) };
  };
  const http = summary("http");
  const n512 = summary("nats512");
  const n1024 = summary("nats1024");
  return [
    [
      `forwarding transport, raw, between two processes: ${sizeMib} MiB as one HTTP POST ` +
      `streamed by fetch (as a hub forwards) to a bare Deno.serve (median of ${TRANSPORT_RUNS})`,
      `${http.mbps.toFixed(0)} MB/s (sender + receiver ${http.cpu} CPU s/GB)`,
      `curl -T to the same receiver: ${curl.mbps.toFixed(0)} MB/s (receiver ${
        perGb(curl.cpu)
      } CPU s/GB)`,
    ],
    [
      `forwarding transport, raw: the same ${sizeMib} MiB published through nats-server in ` +
      `chunks, 8 unacknowledged at most (request/reply acks; median of ${TRANSPORT_RUNS})`,
      `512 KiB chunks: ${n512.mbps.toFixed(0)} MB/s, 1 MiB: ${n1024.mbps.toFixed(0)} MB/s`,
      `HTTP's speed ${(http.mbps / n512.mbps).toFixed(2)}× / ${
        (http.mbps / n1024.mbps).toFixed(2)
      }× NATS's; CPU s/GB: sender + receiver ${n512.cpu} / ${n1024.cpu}, nats-server ` +
      `${n512.server} / ${n1024.server} more`,
    ],
  ];
}

// ---- 3. 30,000 simulated nodes over three hubs ------------------------------------------------

/** A hub alone (no NATS) with `count` simulated nodes: connect time, RSS before and after. */
async function loneHub(issuer: TestIssuer, dir: string, token: string, count: number) {
  const hub = await startTestHub(issuer, `${dir}/lone`);
  try {
    const before = await rssMib(hub.pid);
    const clients = spawnPeer(["nodes", hub.url, token, String(count)]);
    try {
      const { ms } = await clients.next(300_000);
      await idle(hub.pid);
      return { ms, before, after: await rssMib(hub.pid) };
    } finally {
      await clients.close();
    }
  } finally {
    await hub.stop();
  }
}

async function scaleRows(issuer: TestIssuer, dir: string): Promise<string[][]> {
  // Each client process holds one hub's nodes, each hub its own: both need a descriptor each.
  const limit = Number((await run("sh", ["-c", "ulimit -n"])).trim()) || Infinity;
  const perHub = Math.min(NODES_PER_HUB_WANTED, Math.floor((limit - 1_000) / 1_000) * 1_000);
  const scaled = perHub < NODES_PER_HUB_WANTED
    ? ` (scaled down from ${NODES_PER_HUB_WANTED}: ulimit -n is ${limit})`
    : "";
  const token = await cliToken(issuer, "bench", "edge:clusters");
  const lone = await loneHub(issuer, dir, token, perHub);
  const cluster = await startCluster(issuer, `${dir}/scale`, 3, {
    // As the single-hub row runs: the default ping interval; room above the 10,000.
    pingSeconds: 30,
    maxConnections: perHub + 1_000,
  });
  if ("skip" in cluster) return [["simulated nodes over three hubs", "skipped", cluster.skip]];
  await using _cluster = cluster;
  const { hubs, nats } = cluster;
  const natsClient = await cluster.natsClient();
  const nodesKv = await new Kvm(natsClient).open("edgenode_nodes");
  const clients: Peer[] = [];
  try {
    const natsBefore = await rssMib(nats.pid);
    const start = await Promise.all(hubs.map((hub) => rssMib(hub.pid)));
    /** rss[h][k]: hub h's RSS once k + 1 hubs hold their nodes. */
    const rss: number[][] = hubs.map(() => []);
    const connectMs: number[] = [];
    for (const [index, hub] of hubs.entries()) {
      const clients_ = spawnPeer(["nodes", hub.url, token, String(perHub)]);
      clients.push(clients_);
      const { connected, ms } = await clients_.next(300_000);
      if (connected !== perHub) throw new Error(`only ${connected} connected`);
      connectMs.push(ms);
      const total = perHub * (index + 1);
      await waitFor(
        async () => (await nodesKv.status()).values >= total,
        `${total} presence keys`,
        120_000,
      );
      // Every hub has read the new keys once it is idle again.
      for (const other of hubs) await idle(other.pid);
      for (const [h, other] of hubs.entries()) rss[h].push(await rssMib(other.pid));
    }
    const healths = await Promise.all(hubs.map(healthOf));
    const held = healths.map((health) => health.nodes as number);
    const natsAfter = await rssMib(nats.pid);
    const peers = healths.map((health) => health.cluster.hubs);
    const total = perHub * hubs.length;
    // Per local connection: each hub's growth when its own nodes came (with the others' keys
    // known so far); per presence entry: hub 1's growth as hubs 2 and 3 filled.
    const perLocal = hubs.map((_, h) =>
      ((rss[h][h] - (h === 0 ? start[0] : rss[h][h - 1])) * 1024 / perHub).toFixed(1)
    );
    const perRemote = ((rss[0][2] - rss[0][0]) * 1024 / (2 * perHub)).toFixed(1);
    return [
      [
        `${total} simulated nodes over ${hubs.length} hubs of a cluster, ${perHub} each, ` +
        `one hub after another (proof + JWT each, 200 at a time)${scaled}`,
        `${held.reduce((a, b) => a + b, 0)} connected (${held.join(" + ")}), in ${
          connectMs.map((ms) => (ms / 1000).toFixed(1)).join(" + ")
        } s`,
        `each hub sees ${peers.join(", ")} other live hubs; nats-server RSS ${mib(natsBefore)} → ` +
        `${mib(natsAfter)} MiB`,
      ],
      [
        `a cluster hub's memory: ${perHub} local connections and the other hubs' ` +
        `${2 * perHub} presence entries`,
        `hub RSS ${start.map(mib).join(", ")} → ${rss.map((r) => mib(r[2])).join(", ")} MiB; ` +
        `${perLocal.join(", ")} KiB per local connection`,
        `${perRemote} KiB per other hub's node (hub 1 as hubs 2 and 3 filled); a hub alone ` +
        `(no NATS), same run: ${(lone.ms / 1000).toFixed(1)} s for ${perHub}, RSS ` +
        `${mib(lone.before)} → ${mib(lone.after)} MiB, ${
          ((lone.after - lone.before) * 1024 / perHub).toFixed(1)
        } KiB per connection`,
      ],
    ];
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    await natsClient.close();
  }
}

// ---- 4. a dead hub's nodes reachable again -----------------------------------------------------

/** hub id → the hub, for the cluster's current hubs. */
async function hubsById(hubs: TestHub[]): Promise<Map<string, TestHub>> {
  const byId = new Map<string, TestHub>();
  for (const hub of hubs) byId.set((await healthOf(hub)).cluster.hubId, hub);
  return byId;
}

/** Starts a hub of `cluster` on the port `dead` had (the balancer lists that port). */
async function replace(
  cluster: TestCluster,
  issuer: TestIssuer,
  dead: TestHub,
  dir: string,
): Promise<void> {
  const index = cluster.hubs.indexOf(dead);
  const port = Number(new URL(dead.url).port);
  const fresh = await startTestHub(issuer, dir, { port, config: cluster.hubConfig });
  cluster.hubs[index] = fresh;
  for (const hub of cluster.hubs) await clusterUp(hub, cluster.hubs.length - 1);
}

async function failoverRows(issuer: TestIssuer, dir: string): Promise<string[][]> {
  const cluster = await startCluster(issuer, `${dir}/failover`, 3);
  if ("skip" in cluster) return [["a dead hub's nodes", "skipped", cluster.skip]];
  await using _cluster = cluster;
  await Deno.mkdir(`${dir}/failover/lb`);
  const balancer = await startBalancer(
    cluster.hubs.map((hub) => Number(new URL(hub.url).port)),
    `${dir}/failover/lb`,
  );
  if ("skip" in balancer) return [["a dead hub's nodes", "skipped", balancer.skip]];
  await using _balancer = balancer;
  const natsClient = await cluster.natsClient();
  const nodesKv = await new Kvm(natsClient).open("edgenode_nodes");
  const hubOf = async (id: string) => {
    const entry = await nodesKv.get(id);
    if (!entry || entry.operation !== "PUT") return undefined;
    const text = entry.string();
    return JSON.parse(text.slice(text.indexOf(".") + 1)).hub as string;
  };
  const rows: string[][] = [];
  const nodes: HubNode[] = [];
  let replaced = 0;
  try {
    for (let i = 1; i <= REAL_NODES; i++) {
      nodes.push(await joinHub(balancer.url, issuer, "bench", { name: `n${i}` }));
    }
    const pingers = await Promise.all(nodes.map(async (node) => {
      const sep = (await infoOf(node.node, "sep")).sep;
      const headers = { ...sep.headers, Authorization: `Bearer ${node.token}` };
      return async () => {
        const answer = await fetch(`${balancer.url}${PING}`, {
          headers,
          signal: AbortSignal.timeout(2_000),
        }).catch(() => undefined);
        await answer?.body?.cancel();
        return answer?.status === 200;
      };
    }));
    const times: number[] = [];
    const perRound: number[] = [];
    for (let round = 0; round < FAILOVER_ROUNDS; round++) {
      const byId = await hubsById(cluster.hubs);
      const held = new Map<string, number[]>();
      for (const [index, node] of nodes.entries()) {
        const hubId = await hubOf(node.id);
        if (hubId) held.set(hubId, [...held.get(hubId) ?? [], index]);
      }
      const [victimId, victims] = [...held].sort((a, b) => b[1].length - a[1].length)[0];
      const victim = byId.get(victimId)!;
      const killed = Date.now();
      await victim.crash();
      const back = await Promise.all(victims.map(async (index) => {
        await waitFor(pingers[index], `node ${nodes[index].id} reachable again`, 30_000);
        return Date.now() - killed;
      }));
      times.push(...back);
      perRound.push(victims.length);
      await replace(cluster, issuer, victim, `${dir}/failover/hub-r${++replaced}`);
      // The balancer takes the new hub in at its next check.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    rows.push([
      `hub SIGKILLed behind HAProxy (deploy/haproxy-hub.cfg), 3 hubs, ${REAL_NODES} real nodes: ` +
      `time until each of its nodes answers a ping through the balancer again`,
      `median ${(median(times) / 1000).toFixed(2)} s, max ${
        (Math.max(...times) / 1000).toFixed(2)
      } s`,
      `${times.length} nodes over ${FAILOVER_ROUNDS} kills (${perRound.join(", ")} per kill); ` +
      `the node retries after 0.5 s (±20 %), then doubling`,
    ]);
  } finally {
    await Promise.all(nodes.map((node) => node.node.stop()));
  }
  rows.push(await simulatedFailover(cluster, balancer, issuer, dir, replaced));
  await natsClient.close();
  return rows;
}

/** Simulated nodes through the balancer; one hub killed: until all are connected again. */
async function simulatedFailover(
  cluster: TestCluster,
  balancer: TestBalancer,
  issuer: TestIssuer,
  dir: string,
  replaced: number,
): Promise<string[]> {
  // The real nodes' hubs still count their departures for a moment.
  await waitFor(
    async () => (await Promise.all(cluster.hubs.map(healthOf))).every((h) => h.nodes === 0),
    "no nodes left on the hubs",
    30_000,
  );
  const token = await cliToken(issuer, "bench", "edge:clusters");
  const clients = spawnPeer(["nodes", balancer.url, token, String(FAILOVER_SIMULATED)]);
  try {
    const { connected } = await clients.next(300_000);
    if (connected !== FAILOVER_SIMULATED) throw new Error(`only ${connected} connected`);
    const counts = await Promise.all(cluster.hubs.map(async (hub) => (await healthOf(hub)).nodes));
    const most = counts.indexOf(Math.max(...counts));
    const victim = cluster.hubs[most];
    for (const hub of cluster.hubs) await idle(hub.pid);
    const killed = Date.now();
    await victim.crash();
    const whole = await clients.next(120_000);
    const survivors = cluster.hubs.filter((hub) => hub !== victim);
    const held = (await Promise.all(survivors.map(healthOf))).map((h) => h.nodes as number);
    await replace(cluster, issuer, victim, `${dir}/failover/hub-r${replaced + 1}`);
    return [
      `hub SIGKILLed behind HAProxy, 3 hubs, ${FAILOVER_SIMULATED} simulated nodes that ` +
      `reconnect as the node does: until the killed hub's nodes are all connected again`,
      `${whole.reconnected} reconnected: half in ${
        ((whole.medianAt - killed) / 1000).toFixed(2)
      } s, all in ${((whole.lastAt - killed) / 1000).toFixed(2)} s`,
      `the killed hub held ${counts[most]} of ${counts.join(" + ")}; the survivors then held ` +
      `${held.join(" + ")}`,
    ];
  } finally {
    await clients.close();
  }
}

// ---- the section -------------------------------------------------------------------------------

/** Which parts run: all by default. */
export type ClusterPart = "tunnel" | "transport" | "scale" | "failover";

/** The hub cluster rows of the benchmark table. */
export async function clusterRows(
  sizes: ClusterSizes,
  parts: ClusterPart[] = ["tunnel", "transport", "scale", "failover"],
): Promise<string[][]> {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-cluster-" });
  const rows: string[][] = [];
  try {
    const issuer = await makeIssuer(`${dir}/issuer`);
    for (const part of parts) {
      const started = Date.now();
      if (part === "tunnel") rows.push(...await tunnelRows(issuer, dir, sizes.tunnelMib));
      if (part === "transport") rows.push(...await transportRows(dir, sizes.transportMib));
      if (part === "scale") rows.push(...await scaleRows(issuer, dir));
      if (part === "failover") rows.push(...await failoverRows(issuer, dir));
      console.error(`bench: cluster ${part} took ${((Date.now() - started) / 1000).toFixed(0)} s`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  return rows;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { part: { type: "string", multiple: true }, "size-mib": { type: "string" } },
  });
  const size = values["size-mib"] === undefined ? undefined : Number(values["size-mib"]);
  const rows = await clusterRows(
    { tunnelMib: size ?? 64, transportMib: size ?? 256 },
    (values.part ?? ["tunnel", "transport", "scale", "failover"]) as ClusterPart[],
  );
  for (const row of rows) console.log(`| ${row.join(" | ")} |`);
}
