/**
 * Helpers for discovery tests: groups of real nodes on loopback that share a private mDNS port,
 * an independent mDNS client (node:dgram and dns-packet, as any other tool would use), and an
 * independent implementation of the peer proof of spec/mds.yaml, for forged and genuine
 * impostors.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import dgram from "node:dgram";
import dnsPacket from "dns-packet";
import { CompactSign, exportJWK, generateKeyPair, type JWK } from "jose";
import { insightClient, mdsClient } from "../src/sdk/clients.ts";
import { startTestNode, type TestNode, type TestNodeOptions } from "./node.ts";

export { randomMdnsPort } from "./node.ts";

/** Starts a node in the mDNS group on `port` (loopback), announcing every `announceSeconds`. */
export function startMeshNode(
  port: number,
  extra: { name?: string; announceSeconds?: number; discovery?: object } & TestNodeOptions = {},
): Promise<TestNode> {
  return startTestNode({
    ...extra,
    config: {
      apiKey: "mesh-test-key-0123456789",
      nodeName: extra.name ?? "node",
      discovery: { port, announceSeconds: extra.announceSeconds ?? 1, ...extra.discovery },
      ...extra.config,
    },
  });
}

/** The node's insight client, with its API key. */
function insightOf(node: TestNode) {
  return insightClient({ url: node.url, credential: node.apiKey });
}

/** The nodes a node lists in GET /nodes?type=linkLocal (any: tests index into them). */
// deno-lint-ignore no-explicit-any
export async function linkLocalNodes(node: TestNode): Promise<any[]> {
  const { data, error } = await insightOf(node).GET("/nodes", {
    params: { query: { type: "linkLocal" } },
  });
  assert.ok(data, JSON.stringify(error));
  return data.data as unknown[];
}

/** GET /info?types=TYPES: the `data` object (any: tests index into it). */
// deno-lint-ignore no-explicit-any
export async function nodeInfo(node: TestNode, types: string): Promise<any> {
  const { data, error } = await insightOf(node).GET("/info", { params: { query: { types } } });
  assert.ok(data, JSON.stringify(error));
  return data.data;
}

/** The ids a node lists in GET /nodes?type=linkLocal, sorted. */
export async function linkLocalIds(node: TestNode): Promise<string[]> {
  return (await linkLocalNodes(node)).map((n: { id: string }) => n.id).sort();
}

/** The supernode id a node reports. */
export async function supernodeId(node: TestNode): Promise<string> {
  return (await nodeInfo(node, "supernode")).supernode.id;
}

/** The node id, from the unauthenticated ping. */
export async function nodeIdOf(node: TestNode): Promise<string> {
  const { data } = await mdsClient({ url: node.url }).GET("/mds/v1/nodes", {
    params: { query: { ping: true } },
  });
  return (data as { data: { id: string } }).data.id;
}

/** What a node signs of itself (payload of a proof; not verified here). */
// deno-lint-ignore no-explicit-any
export async function signedSelf(node: TestNode): Promise<any> {
  const challenge = "c".repeat(32);
  const answer = await mdsClient({ url: node.url }).GET("/mds/v1/nodes", {
    params: { query: { ping: true, challenge } },
  });
  const { data } = answer.data as { data: { proof: string } };
  return JSON.parse(Buffer.from(data.proof.split(".")[1], "base64url").toString()).node;
}

/** Sorted copy. */
export const sorted = (ids: string[]) => [...ids].sort();

/** An mDNS client on an ephemeral port (or on the group port, to hear multicast answers). */
export async function openMdnsClient(groupPort: number, joinGroup = false) {
  const socket = dgram.createSocket({ type: "udp4", reuseAddr: true });
  const packets: { packet: dnsPacket.Packet; from: dgram.RemoteInfo }[] = [];
  socket.on("message", (message, from) => {
    try {
      packets.push({ packet: dnsPacket.decode(message as never), from });
    } catch { /* not DNS */ }
  });
  const bound = Promise.withResolvers<void>();
  socket.bind(
    joinGroup ? groupPort : 0,
    joinGroup ? "0.0.0.0" : "127.0.0.1",
    () => bound.resolve(),
  );
  await bound.promise;
  if (joinGroup) socket.addMembership("224.0.0.251", "127.0.0.1");
  socket.setMulticastInterface("127.0.0.1");
  socket.setMulticastLoopback(true);
  return {
    packets,
    send(packet: dnsPacket.Packet): Promise<void> {
      const bytes = dnsPacket.encode(packet);
      return new Promise((resolve) =>
        socket.send(bytes, groupPort, "224.0.0.251", () => resolve())
      );
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/** An announcement of a node, as the spec's records (TTL in seconds). */
export function announcement(
  node: { id: string; name: string; port: number; txt?: Record<string, string> },
  ttl = 60,
): dnsPacket.Packet {
  const instance = `${node.name}-${node.id.slice(0, 8)}._edgenode._tcp.local`;
  const txt = { id: node.id, name: node.name, ...node.txt };
  return {
    type: "response",
    id: 0,
    flags: 1 << 10,
    answers: [
      { type: "PTR", name: "_edgenode._tcp.local", ttl, data: instance },
      { type: "SRV", name: instance, ttl, data: { port: node.port, target: "impostor.local" } },
      {
        type: "TXT",
        name: instance,
        ttl,
        data: Object.entries(txt).map(([k, v]) => `${k}=${v}`),
      },
      { type: "A", name: "impostor.local", ttl, data: "127.0.0.1" },
    ],
  };
}

/** A key pair and the node id the spec derives from it. */
export async function impostorKey() {
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", { extractable: true });
  const jwk: JWK = await exportJWK(publicKey);
  const digest = await crypto.subtle.digest("SHA-256", Buffer.from(jwk.x!, "base64url"));
  const id = Buffer.from(new Uint8Array(digest).subarray(0, 28)).toString("hex");
  return { privateKey, jwk, id };
}

/** A proof as spec/mds.yaml defines it, signed with any key for any claimed description. */
export async function proofFor(
  key: Awaited<ReturnType<typeof impostorKey>>,
  challenge: string,
  node: Record<string, unknown>,
): Promise<string> {
  const payload = { challenge, iat: Math.floor(Date.now() / 1000), node };
  return await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: "EdDSA", typ: "edgenode-proof", jwk: key.jwk })
    .sign(key.privateKey);
}

/** A NodeDescription for an impostor listening on `port`. */
export function describeImpostor(id: string, name: string, port: number) {
  return {
    id,
    accountId: "",
    name,
    os: "linux",
    version: "0.0.1",
    addresses: [{ type: "local", url: { href: `http://127.0.0.1:${port}` } }],
    services: [],
    characteristics: [],
    startedAt: Date.now(),
    localLinkNetworkId: "lln-impostor",
  };
}
