/**
 * Discovery figures for `deno task bench` (alone: `deno task bench --only discovery`):
 * - how long after its start a node is listed by a running peer, next to how long it takes to
 *   listen at all (the process start, the same run's baseline);
 * - how long a node takes to verify 50 nodes announced at once (simulated in this process, each
 *   with its own key and HTTP server, proving itself as spec/mds.yaml says);
 * - GET /nodes?type=linkLocal and the encrypted GET /mds/v1/nodes with 51 members, in
 *   requests/s with wrk, next to a bare Deno.serve sending the same JSON.
 *
 * @module
 */
import { cliToken, makeIssuer, rpc } from "../../testing/identity.ts";
import {
  announcement,
  describeImpostor,
  impostorKey,
  linkLocalIds,
  openMdnsClient,
  proofFor,
  randomMdnsPort,
  startMeshNode,
} from "../../testing/mesh.ts";
import { median, wrk } from "./tools.ts";

const SIMULATED = 50;

async function until(condition: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Starts 50 simulated nodes and announces them at once; resolves with their servers. */
async function simulatedNodes(mdnsPort: number) {
  const client = await openMdnsClient(mdnsPort);
  const servers: Deno.HttpServer<Deno.NetAddr>[] = [];
  const ids: string[] = [];
  for (let i = 0; i < SIMULATED; i++) {
    const key = await impostorKey();
    ids.push(key.id);
    const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async (request) => {
        const challenge = new URL(request.url).searchParams.get("challenge") ?? "";
        const node = describeImpostor(key.id, `sim-${i}`, server.addr.port);
        return Response.json({ data: { id: key.id, proof: await proofFor(key, challenge, node) } });
      },
    );
    servers.push(server);
  }
  const announce = () =>
    Promise.all(
      servers.map((server, i) =>
        client.send(announcement({ id: ids[i], name: `sim-${i}`, port: server.addr.port }, 120))
      ),
    );
  return {
    ids,
    announce,
    async close() {
      await client.close();
      await Promise.all(servers.map((server) => server.shutdown()));
    },
  };
}

/** The discovery rows of the benchmark table. */
export async function discoveryRows(): Promise<string[][]> {
  const rows: string[][] = [];
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-" });
  const mdnsPort = randomMdnsPort();
  const issuer = await makeIssuer(`${dir}/issuer`);
  const trust = ["--trust", issuer.trustFile];
  // Announce every 30 s, as by default: joining must not wait for a periodic announcement.
  const a = await startMeshNode(mdnsPort, { name: "a", announceSeconds: 30, args: trust });
  try {
    const listed: number[] = [];
    const listening: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      const b = await startMeshNode(mdnsPort, { name: `b${i}`, announceSeconds: 30 });
      listening.push(performance.now() - started);
      const id = (await (await fetch(`${b.url}/mds/v1/nodes?ping=true`)).json()).data.id;
      await until(async () => (await linkLocalIds(a)).includes(id));
      listed.push(performance.now() - started);
      await b.stop();
      await until(async () => !(await linkLocalIds(a)).includes(id));
    }
    rows.push([
      "a new node listed by a running peer, from its start (median of 5)",
      `${median(listed).toFixed(0)} ms`,
      `the node listens after ${median(listening).toFixed(0)} ms (process start)`,
    ]);

    const simulated = await simulatedNodes(mdnsPort);
    try {
      const announced = performance.now();
      await simulated.announce();
      await until(async () => (await linkLocalIds(a)).length === SIMULATED + 1);
      rows.push([
        `${SIMULATED} nodes announced at once, all verified and listed`,
        `${(performance.now() - announced).toFixed(0)} ms`,
        "one HTTP check with an Ed25519 proof each, 8 at a time",
      ]);
      const listing = await (await fetch(`${a.url}/mesh/insight/v1/nodes?type=linkLocal`, {
        headers: a.auth(),
      })).json();
      // The baseline serializes the same object on every request, as the node does.
      const baseline = Deno.serve(
        { hostname: "127.0.0.1", port: 0, onListen() {} },
        () => Response.json(listing),
      );
      const base = await wrk(`http://127.0.0.1:${baseline.addr.port}/`);
      await baseline.shutdown();
      rows.push([
        `GET /nodes?type=linkLocal, ${SIMULATED + 1} nodes (wrk -c50, 1 core)`,
        `${await wrk(`${a.url}/mesh/insight/v1/nodes?type=linkLocal`, a.auth())} req/s`,
        `bare Deno.serve same JSON: ${base} req/s`,
      ]);
      await rpc(a, "associateAccount", [await cliToken(issuer, "bench", "edge:account:associate")]);
      const token = await cliToken(issuer, "bench", "edge:clusters");
      rows.push([
        `GET /mds/v1/nodes?clusters=linkLocal, ${
          SIMULATED + 1
        } nodes, encrypted (wrk -c50, 1 core)`,
        `${await wrk(`${a.url}/mds/v1/nodes?clusters=linkLocal`, {
          Authorization: `Bearer ${token}`,
        })} req/s`,
        "verifies the JWT (EdDSA), derives the key (HKDF), encrypts (AES-GCM) per request",
      ]);
    } finally {
      await simulated.close();
    }
  } finally {
    await a.stop();
    await Deno.remove(dir, { recursive: true });
  }
  return rows;
}
