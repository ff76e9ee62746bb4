/**
 * Link-local discovery between real nodes on loopback: listing, election, departures, and
 * announcements that must not be believed.
 */
import assert from "node:assert/strict";
import type dnsPacket from "dns-packet";
import type { TestNode } from "../testing/node.ts";
import { runEdgenode, waitFor, withTempDir } from "../testing/node.ts";
import { debianPackage } from "../testing/debian.ts";
import { deployScript } from "../testing/mcm.ts";
import {
  announcement,
  describeImpostor,
  impostorKey,
  linkLocalIds,
  linkLocalNodes,
  nodeIdOf,
  nodeInfo,
  openMdnsClient,
  proofFor,
  randomMdnsPort,
  signedSelf,
  sorted,
  startMeshNode,
  supernodeId,
} from "../testing/mesh.ts";

/** Starts alpha, beta and gamma (in that order), waits until all list all, runs `test`. */
async function withThree(test: (nodes: TestNode[], ids: string[]) => Promise<void>) {
  const port = randomMdnsPort();
  const nodes: TestNode[] = [];
  try {
    for (const name of ["alpha", "beta", "gamma"]) nodes.push(await startMeshNode(port, { name }));
    const ids = await Promise.all(nodes.map(nodeIdOf));
    // Within 5 s of the last start (in practice well under one).
    await everyoneSees(nodes, ids);
    await test(nodes, ids);
  } finally {
    await Promise.all(nodes.map((node) => node.stop()));
  }
}

async function everyoneSees(nodes: TestNode[], ids: string[], ms = 5000) {
  const want = JSON.stringify(sorted(ids));
  for (const node of nodes) {
    await waitFor(
      async () => JSON.stringify(await linkLocalIds(node)) === want,
      `${node.url} to list ${ids.length} nodes`,
      ms,
    );
  }
}

Deno.test("three nodes list each other and agree on the supernode", () =>
  withThree(async (nodes, ids) => {
    const supernodes = await Promise.all(nodes.map(supernodeId));
    assert.equal(new Set(supernodes).size, 1, `supernodes differ: ${supernodes}`);
    // The rule: the earliest start wins; alpha started first.
    assert.equal(supernodes[0], ids[0]);
    const selves = await Promise.all(nodes.map(signedSelf));
    assert.equal(new Set(selves.map((s) => s.localLinkNetworkId)).size, 1);

    // Entries are the peers' own signed descriptions: names, addresses, os.
    const data = await linkLocalNodes(nodes[0]);
    const beta = data.find((n: { id: string }) => n.id === ids[1]);
    assert.equal(beta.name, "beta");
    assert.equal(beta.os, Deno.build.os);
    assert.deepEqual(beta.addresses, [{ type: "local", url: { href: nodes[1].url } }]);
    assert.deepEqual(beta.services, []);
    const info = { data: await nodeInfo(nodes[2], "supernode,self") };
    assert.equal(info.data.supernode.name, "alpha");
    assert.deepEqual(info.data.supernode.addresses, [{
      type: "local",
      url: { href: nodes[0].url },
    }]);
    assert.equal(info.data.self.name, "gamma");
  }));

Deno.test("a node stopped cleanly leaves at once; the next supernode keeps the network id", () =>
  withThree(async (nodes, ids) => {
    const networkId = (await signedSelf(nodes[1])).localLinkNetworkId;
    assert.equal(await supernodeId(nodes[1]), ids[0]);

    await nodes[0].stop();
    // The goodbye is checked and the node is gone; well before its records would expire.
    await everyoneSees(nodes.slice(1), ids.slice(1), 1500);
    assert.equal(await supernodeId(nodes[1]), ids[1]);
    assert.equal(await supernodeId(nodes[2]), ids[1]);
    assert.equal((await signedSelf(nodes[2])).localLinkNetworkId, networkId);
  }));

Deno.test("a killed node stays listed until its records expire, then goes", () =>
  withThree(async (nodes, ids) => {
    await nodes[2].crash();
    const crashedAt = Date.now();
    // No goodbye: the others still list it (records live 3 s with a 1 s announce interval).
    assert.deepEqual(await linkLocalIds(nodes[0]), sorted(ids));
    await everyoneSees(nodes.slice(0, 2), ids.slice(0, 2), 6000);
    const gone = Date.now() - crashedAt;
    assert.ok(gone >= 1000, `dropped after ${gone} ms, before its records could expire`);
  }));

Deno.test("announcements that cannot be proven are not listed; a genuine one is", async () => {
  const port = randomMdnsPort();
  const a = await startMeshNode(port, { name: "a" });
  const b = await startMeshNode(port, { name: "b" });
  const client = await openMdnsClient(port);
  const servers: Deno.HttpServer[] = [];
  const asked = new Map<number, number>();
  const serve = (handler: (url: URL) => Promise<Response> | Response) => {
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
      asked.set(server.addr.port, (asked.get(server.addr.port) ?? 0) + 1);
      return handler(new URL(request.url));
    });
    servers.push(server);
    return server.addr.port;
  };
  try {
    const [idA, idB] = [await nodeIdOf(a), await nodeIdOf(b)];
    await everyoneSees([a, b], [idA, idB]);
    const impostor = await impostorKey();
    const other = await impostorKey();

    // 1. A made-up node pointing at a server that is not a node.
    const plainPort = serve(() => new Response("hello"));
    await client.send(announcement({ id: impostor.id, name: "plain", port: plainPort }));
    // 2. Claiming b's id, proving with another key.
    const wrongKeyPort = serve(async (url) =>
      Response.json({
        data: {
          id: idB,
          proof: await proofFor(
            other,
            url.searchParams.get("challenge")!,
            describeImpostor(idB, "b", wrongKeyPort),
          ),
        },
      })
    );
    await client.send(announcement({ id: idB, name: "b", port: wrongKeyPort, txt: { x: "1" } }));
    // 3. Replaying a real proof of b's (signed for another challenge).
    const replayed =
      await (await fetch(`${b.url}/mds/v1/nodes?ping=true&challenge=${"r".repeat(24)}`))
        .json();
    const replayPort = serve(() => Response.json(replayed));
    await client.send(announcement({ id: idB, name: "b", port: replayPort, txt: { x: "2" } }));
    // 4. A goodbye for b that b did not send.
    await client.send(announcement({ id: idB, name: "b", port: replayPort }, 0));
    // 5. Control: a node that really holds its key is listed.
    const genuinePort = serve(async (url) =>
      Response.json({
        data: {
          id: impostor.id,
          proof: await proofFor(
            impostor,
            url.searchParams.get("challenge")!,
            describeImpostor(impostor.id, "genuine", genuinePort),
          ),
        },
      })
    );
    await client.send(announcement({ id: impostor.id, name: "genuine", port: genuinePort }));

    await waitFor(async () => (await linkLocalIds(a)).includes(impostor.id), "the genuine node");
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.deepEqual(await linkLocalIds(a), sorted([idA, idB, impostor.id]));
    const data = await linkLocalNodes(a);
    const listedB = data.find((n: { id: string }) => n.id === idB);
    assert.deepEqual(listedB.addresses, [{ type: "local", url: { href: b.url } }]);
    assert.equal(data.find((n: { id: string }) => n.id === impostor.id).name, "genuine");
    // Each forgery was checked (and refused), not merely missed.
    for (const checked of [plainPort, wrongKeyPort, replayPort]) assert.ok(asked.get(checked));
    assert.match(a.output(), /not listing .* the proof's key does not belong to node/);
    assert.match(a.output(), /not listing .* the proof is for another challenge/);
    // The forger announces again after the check queue's retry time: checked again, not logged
    // again (one line per peer, address and reason).
    const checksBefore = asked.get(wrongKeyPort)!;
    await new Promise((resolve) => setTimeout(resolve, 5200));
    await client.send(announcement({ id: idB, name: "b", port: wrongKeyPort, txt: { x: "1" } }));
    await waitFor(() => asked.get(wrongKeyPort)! > checksBefore, "the second check");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const lines = a.output().split("\n").filter((line) =>
      line.includes(`:${wrongKeyPort}`) && /does not belong to node/.test(line)
    );
    assert.equal(lines.length, 1, lines.join("\n"));
  } finally {
    await client.close();
    await Promise.all(servers.map((server) => server.shutdown()));
    await Promise.all([a.stop(), b.stop()]);
  }
});

Deno.test("with multicast off, static peers are checked and listed", async () => {
  const port = randomMdnsPort();
  const b = await startMeshNode(port, { name: "b", discovery: { mdns: false } });
  const a = await startMeshNode(port, { name: "a", discovery: { mdns: false, peers: [b.url] } });
  try {
    const [idA, idB] = [await nodeIdOf(a), await nodeIdOf(b)];
    await waitFor(async () => (await linkLocalIds(a)).length === 2, "a to list b");
    assert.deepEqual(await linkLocalIds(a), sorted([idA, idB]));
    // b has neither multicast nor peers: it knows only itself.
    assert.deepEqual(await linkLocalIds(b), [idB]);
    await b.stop();
    await waitFor(async () => (await linkLocalIds(a)).length === 1, "a to drop b", 6000);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

Deno.test("with multicast off, a static peer's deploy shows within seconds, not an announce interval", async () => {
  const port = randomMdnsPort();
  const quiet = { announceSeconds: 30 };
  await using b = await startMeshNode(port, { name: "b", discovery: { mdns: false, ...quiet } });
  await using a = await startMeshNode(port, {
    name: "a",
    discovery: { mdns: false, peers: [b.url], ...quiet },
  });
  const idB = await nodeIdOf(b);
  const servicesOfB = async () =>
    ((await linkLocalNodes(a)).find((n: { id: string }) => n.id === idB)?.services ?? [])
      .map((s: { serviceType: string }) => s.serviceType);
  await waitFor(async () => (await linkLocalIds(a)).includes(idB), "a to list b");
  const client = "5d322ba6-8e4f-4b6f-a0b3-6d2b9c1e0f11";
  await deployScript(
    b,
    "hello",
    "mimikModule.exports = function (c, q, r) { r.end('hi'); };",
    {},
    client,
  );
  const started = Date.now();
  await waitFor(
    async () => (await servicesOfB()).includes(`${client}-hello`),
    "a to list b's new service",
    10_000,
  );
  console.log(`static peer's deploy listed after ${Date.now() - started} ms`);
});

Deno.test("bad discovery settings stop the node with exit 2 and say what to fix", () =>
  withTempDir(async (dataDir) => {
    const serve = async (discovery: object) => {
      await Deno.writeTextFile(
        `${dataDir}/config.json`,
        JSON.stringify({ apiKey: "mesh-test-key-0123456789", discovery }),
      );
      return await runEdgenode([
        "serve",
        "--data-dir",
        dataDir,
        "--host",
        "127.0.0.1",
        "--port",
        "0",
      ]);
    };
    const noSuchInterface = await serve({ port: randomMdnsPort(), interfaces: ["nope0"] });
    assert.equal(noSuchInterface.code, 2);
    assert.match(
      noSuchInterface.stderr,
      /discovery.interfaces: no IPv4 interface 'nope0'; there are lo \(127.0.0.1\)/,
    );
    const badPeer = await serve({ peers: ["ftp://10.0.0.5"] });
    assert.equal(badPeer.code, 2);
    assert.match(
      badPeer.stderr,
      /discovery.peers.0: must be a base URL like http:\/\/10.0.0.5:8083/,
    );
    const tooFast = await serve({ announceSeconds: 0.01 });
    assert.equal(tooFast.code, 2);
    assert.match(tooFast.stderr, /discovery.announceSeconds: must be at least 0.2/);
  }));

/** Waits `ms` milliseconds. */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A query for the service type, with these known answers. */
function serviceQuery(id = 0, known: dnsPacket.Answer[] = []): dnsPacket.Packet {
  return {
    type: "query",
    id,
    questions: [{ type: "PTR", name: "_edgenode._tcp.local", class: "IN" }],
    answers: known,
  };
}

/** Whether a packet is a response that carries a PTR record of the service type. */
function carriesServicePtr({ packet }: { packet: dnsPacket.Packet }): boolean {
  return packet.type === "response" &&
    (packet.answers ?? []).some((a) => a.type === "PTR" && a.name === "_edgenode._tcp.local");
}

/**
 * One node announcing every 30 s (so that no announcement falls into a test) and a client that
 * joined the node's private group, on the mDNS port: its queries are not legacy ones. Runs
 * `test` after the node's three start-up announcements, with the node's PTR record.
 */
async function withQuietNode(
  test: (
    client: Awaited<ReturnType<typeof openMdnsClient>>,
    ptr: dnsPacket.Answer,
  ) => Promise<void>,
) {
  const port = randomMdnsPort();
  const client = await openMdnsClient(port, true);
  const node = await startMeshNode(port, { name: "quiet", announceSeconds: 30 });
  try {
    // Announcements carry every record as an answer and nothing else.
    const announcements = () =>
      client.packets.filter((p) => carriesServicePtr(p) && !p.packet.additionals?.length);
    await waitFor(() => announcements().length >= 3, "the three start-up announcements", 8000);
    // Past the one-second limit of the last one.
    await sleep(1100);
    const ptr = announcements()[0].packet.answers!.find((a) => a.type === "PTR")!;
    await test(client, ptr);
  } finally {
    await client.close();
    await node.stop();
  }
}

Deno.test("a legacy unicast query gets the id and question back, TTL <= 10 s, no cache-flush bit", async () => {
  const port = randomMdnsPort();
  const node = await startMeshNode(port, { name: "legacy", announceSeconds: 30 });
  // On an ephemeral port: a plain DNS resolver (RFC 6762 §6.7).
  const client = await openMdnsClient(port);
  try {
    const id = 0x1234;
    const deadline = Date.now() + 5000;
    while (!client.packets.some((p) => p.packet.type === "response") && Date.now() < deadline) {
      await client.send(serviceQuery(id));
      await sleep(200);
    }
    const answer = client.packets.find((p) => p.packet.type === "response");
    assert.ok(answer, "no unicast answer");
    assert.equal(answer.from.port, port);
    assert.equal(answer.packet.id, id);
    assert.deepEqual(
      answer.packet.questions?.map(({ name, type }) => ({ name, type })),
      [{ name: "_edgenode._tcp.local", type: "PTR" }],
    );
    const records = [...answer.packet.answers ?? [], ...answer.packet.additionals ?? []];
    assert.deepEqual(records.map((r) => r.type).sort(), ["A", "PTR", "SRV", "TXT"]);
    for (const record of records) {
      assert.ok(record.type !== "OPT");
      // dns-packet reads the top bit of the class field as `flush` and the rest as `class`.
      assert.equal(record.flush, false, `${record.type} has the cache-flush bit`);
      assert.equal(record.class, "IN");
      assert.ok(record.ttl !== undefined && record.ttl <= 10, `${record.type} TTL ${record.ttl}`);
    }
  } finally {
    await client.close();
    await node.stop();
  }
});

Deno.test("a burst of 20 queries within a second gets at most two multicast answers", () =>
  withQuietNode(async (client) => {
    const from = client.packets.length;
    for (let i = 0; i < 20; i++) {
      await client.send(serviceQuery());
      await sleep(40);
    }
    await sleep(2000);
    const answers = client.packets.slice(from).filter(carriesServicePtr);
    assert.ok(answers.length >= 1, "the burst got no answer at all");
    assert.ok(answers.length <= 2, `${answers.length} multicast answers to 20 queries`);
  }));

Deno.test("a query that lists the answer with at least half its TTL gets no answer (known answers)", () =>
  withQuietNode(async (client, ptr) => {
    assert.ok(ptr.type === "PTR" && ptr.ttl === 90);
    let from = client.packets.length;
    await client.send(serviceQuery(0, [ptr]));
    await client.send(serviceQuery(0, [{ ...ptr, ttl: 45 }]));
    await sleep(1500);
    assert.deepEqual(client.packets.slice(from).filter(carriesServicePtr), []);
    // Control: with less than half the TTL left, the querier gets the record again.
    from = client.packets.length;
    await client.send(serviceQuery(0, [{ ...ptr, ttl: 44 }]));
    await waitFor(
      () => client.packets.slice(from).some(carriesServicePtr),
      "an answer to a query whose known answer is about to expire",
      1500,
    );
  }));

/** A python3 that has python-zeroconf, if there is one. */
async function findZeroconfPython(): Promise<string | undefined> {
  for (const python of ["python3", "/usr/bin/python3"]) {
    const ok = await new Deno.Command(python, {
      args: ["-c", "import zeroconf"],
      stdout: "null",
      stderr: "null",
    }).output().then((o) => o.success, () => false);
    if (ok) return python;
  }
  return undefined;
}

/** python-zeroconf, installed from Debian (python3-zeroconf) when missing and apt-get can. */
const zeroconfPython = await (async () => {
  const found = await debianPackage(
    "python3-zeroconf",
    async () => await findZeroconfPython() !== undefined,
  );
  if (found === true) return await findZeroconfPython();
  console.log(`discovery_test: the python-zeroconf test is skipped: ${found.missing}`);
  return undefined;
})();

/**
 * python-zeroconf, an independent implementation, as a legacy unicast resolver (its sockets
 * have a port of their own): asks the test's group for the service type and resolves the
 * instance from its cache (PTR, then SRV, TXT and A from the additionals).
 */
const ZEROCONF_RESOLVE = `
import json, sys, time
from zeroconf import DNSOutgoing, DNSQuestion, ServiceInfo, Zeroconf, const
port = int(sys.argv[1])
type_ = "_edgenode._tcp.local."
zc = Zeroconf(interfaces=["127.0.0.1"], unicast=True)
found = None
try:
    deadline = time.time() + 8
    while found is None and time.time() < deadline:
        out = DNSOutgoing(const._FLAGS_QR_QUERY)
        out.add_question(DNSQuestion(type_, const._TYPE_PTR, const._CLASS_IN))
        zc.send(out, sys.argv[2], port)
        time.sleep(0.3)
        for ptr in zc.cache.get_all_by_details(type_, const._TYPE_PTR, const._CLASS_IN):
            info = ServiceInfo(type_, ptr.alias)
            if info.load_from_cache(zc):
                found = info
                break
finally:
    zc.close()
if found is None:
    sys.exit("not resolved")
print(json.dumps({
    "name": found.name,
    "server": found.server,
    "port": found.port,
    "addresses": found.parsed_addresses(),
    "properties": {k.decode(): (v or b"").decode() for k, v in found.properties.items()},
}))
`;

Deno.test({
  name: "python-zeroconf resolves a node (legacy unicast query to the group)",
  ignore: !zeroconfPython,
  async fn() {
    const port = randomMdnsPort();
    const node = await startMeshNode(port, { name: "zc" });
    try {
      const id = await nodeIdOf(node);
      const output = await new Deno.Command(zeroconfPython!, {
        args: ["-c", ZEROCONF_RESOLVE, String(port), "224.0.0.251"],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(output.stderr);
      assert.ok(output.success, stderr);
      const found = JSON.parse(new TextDecoder().decode(output.stdout));
      assert.equal(found.name, `zc-${id.slice(0, 8)}._edgenode._tcp.local.`);
      assert.equal(found.server, `edgenode-${id.slice(0, 12)}.local.`);
      assert.equal(found.port, Number(new URL(node.url).port));
      assert.deepEqual(found.addresses, ["127.0.0.1"]);
      assert.equal(found.properties.id, id);
      assert.equal(found.properties.name, "zc");
    } finally {
      await node.stop();
    }
  },
});
