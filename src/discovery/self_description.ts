/**
 * What this node says of itself in listings and proofs: identity, URLs and characteristics.
 *
 * @module
 */
import { statfs } from "node:fs/promises";
import type { Address, Characteristic } from "../../gen/mds/validators.ts";
import type { Identity } from "../identity/identity.ts";
import type { SelfDescription } from "./link_local.ts";

/**
 * The node's own URLs: its listening address, or, when it listens on every interface, one per
 * non-internal IPv4 address (loopback when there is none).
 */
export function localAddresses(host: string, port: number): Address[] {
  const hosts = host === "0.0.0.0" || host === "::"
    ? Deno.networkInterfaces()
      .filter((i) => i.family === "IPv4" && !i.address.startsWith("127."))
      .map((i) => i.address)
    : [host];
  const shown = (h: string) => (h.includes(":") ? `[${h}]` : h);
  return (hosts.length > 0 ? hosts : ["127.0.0.1"]).map((h) => ({
    type: "local",
    url: { href: `http://${shown(h)}:${port}` },
  }));
}

/** The machine's characteristics, as the reference names them; read once at start. */
export async function machineCharacteristics(
  dataDir: string,
  version: string,
): Promise<Characteristic[]> {
  const storage = await statfs(dataDir).catch(() => undefined);
  let memory = "";
  try {
    memory = String(Deno.systemMemoryInfo().total);
  } catch {
    // Not permitted or not available: the characteristic stays empty.
  }
  return [
    { name: "cpu", value: `${Deno.build.arch}, ${navigator.hardwareConcurrency} cores` },
    { name: "edgeVersion", value: version },
    { name: "os", value: Deno.build.os },
    { name: "totalPhysicalMemory", value: memory },
    { name: "totalStorage", value: storage ? String(storage.blocks * storage.bsize) : "" },
  ];
}

/** The models a node advertises and its engine's backend (spec/mds.yaml, "Models"). */
export type ModelsDescription = Pick<SelfDescription, "models" | "backend">;

/**
 * A function that describes this node as it is now (the account can change at any time).
 * `services` and `models` are asked at each description: discovery imports neither the
 * deployments nor the registry and engine they come from.
 */
export function selfDescriber(
  identity: Pick<Identity, "nodeId" | "accountId" | "name" | "version">,
  characteristics: Characteristic[],
  addresses: () => Address[],
  services: () => SelfDescription["services"] = () => [],
  models: () => ModelsDescription = () => ({}),
): () => SelfDescription {
  return () => {
    const { models: adverts, backend } = models();
    return {
      id: identity.nodeId,
      accountId: identity.accountId,
      name: identity.name,
      os: Deno.build.os,
      version: identity.version,
      addresses: addresses(),
      services: services(),
      characteristics,
      // Absent rather than empty: a peer or hub older than these fields refuses a description
      // that has them, so a node with no models stays understood by them.
      ...(adverts?.length ? { models: adverts } : {}),
      ...(adverts?.length && backend ? { backend } : {}),
    };
  };
}
