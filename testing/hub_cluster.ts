/**
 * A hub cluster for the tests: a real nats-server with JetStream and several `edgenode hub
 * --nats` processes sharing a cluster key, as an operator would run them.
 *
 * @module
 */
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { TestIssuer } from "./identity.ts";
import { startTestHub, type TestHub } from "./hub.ts";
import { startTestNats, type TestNats } from "./nats.ts";
import { waitFor } from "./node.ts";

/** NATS and the hubs on it. */
export interface TestCluster extends AsyncDisposable {
  nats: TestNats;
  hubs: TestHub[];
  /** hub.json for one more hub of this cluster. */
  hubConfig: Record<string, unknown>;
  /** A NATS client with the hubs' NATS credentials (but not their cluster key). */
  natsClient(): Promise<NatsConnection>;
}

/** A hub's health. */
// deno-lint-ignore no-explicit-any
export async function healthOf(hub: { url: string }): Promise<any> {
  return await (await fetch(`${hub.url}/hub/v1/health`)).json();
}

/** Waits until `hub` is in the cluster with `peers` other live hubs. */
export async function clusterUp(hub: TestHub, peers: number): Promise<void> {
  let last = "";
  await waitFor(
    async () => {
      const health = await healthOf(hub);
      last = JSON.stringify(health);
      return health.cluster?.status === "up" && health.cluster.hubs === peers;
    },
    `the cluster seen from ${hub.url} (last health: ${last})`,
    20_000,
  );
}

/** Starts nats-server and `count` hubs trusting `issuer`, or says why nats-server cannot run. */
export async function startCluster(
  issuer: TestIssuer,
  dir: string,
  count: number,
  extra: Record<string, unknown> = {},
): Promise<TestCluster | { skip: string }> {
  await Deno.mkdir(`${dir}/nats`, { recursive: true });
  const nats = await startTestNats(`${dir}/nats`);
  if ("skip" in nats) return nats;
  const keyFile = `${dir}/cluster.key`;
  await Deno.writeFile(keyFile, crypto.getRandomValues(new Uint8Array(32)), { mode: 0o600 });
  const hubConfig = {
    pingSeconds: 2,
    ...extra,
    nats: {
      servers: [nats.url],
      user: nats.user,
      passwordFile: nats.passwordFile,
      clusterKeyFile: keyFile,
    },
  };
  const hubs = await Promise.all(
    Array.from(
      { length: count },
      (_, n) => startTestHub(issuer, `${dir}/hub${n + 1}`, { config: hubConfig }),
    ),
  );
  await Promise.all(hubs.map((hub) => clusterUp(hub, count - 1)));
  return {
    nats,
    hubs,
    hubConfig,
    natsClient: () => connect({ servers: nats.url, user: nats.user, pass: nats.password }),
    async [Symbol.asyncDispose]() {
      await Promise.all(hubs.map((hub) => hub.stop().catch(() => {})));
      await nats.stop();
    },
  };
}

/** The id of the hub that node `nodeId` is connected to, read from the cluster's presence. */
export async function hubIdOf(nats: NatsConnection, nodeId: string): Promise<string | undefined> {
  const kv = await new Kvm(nats).open("edgenode_nodes");
  const entry = await kv.get(nodeId);
  if (!entry || entry.operation !== "PUT") return undefined;
  const text = entry.string();
  return JSON.parse(text.slice(text.indexOf(".") + 1)).hub;
}
