/**
 * The nodes of the mesh a model file can be fetched from (issue 37, "Models travel on the LAN"):
 * the verified LAN members of this node's account whose signed description advertises a ready
 * model file with the sha256 wanted, each proved at its address before it is asked, each asked
 * with a request signed by this node's key (never the account's token: a LAN peer's account is
 * its own claim, and a token handed to an impostor could be replayed at the hub). With
 * `inference.mesh: "account"`, the account's nodes connected to the hub come after them, reached
 * through the hub's tunnel with this node's own stored token (the hub is trusted with it), the
 * request still signed by this node's key.
 *
 * @module
 */
import type { NodeDescription } from "../../gen/mds/validators.ts";
import { proveAt } from "../discovery/mod.ts";
import { type HubLink, hubRoute } from "../hub_client/mod.ts";
import { type Identity, NODE_REQUEST_HEADER } from "../identity/mod.ts";
import type { FileSource, MeshFiles } from "../store/mod.ts";

/** A node is left when it sends no byte this long (or the transfer's stall time, if shorter). */
export const PEER_STALL_MS = 5000;

/** What finding sources on the mesh needs of the node. */
export interface MeshSourcesDeps {
  /** `inference.mesh`: "off" looks for nothing. */
  mesh(): "off" | "lan" | "account";
  /** The node's identity: its id, account, key, and the account token it holds for the hub. */
  identity: Pick<
    Identity,
    "nodeId" | "accountId" | "storedToken" | "signRequest" | "checkAccountToken"
  >;
  /** The hub link, when the node has a hub. */
  hub?: Pick<HubLink, "list" | "bep">;
  /** The LAN members discovery verified (this node included). */
  members(): NodeDescription[];
  /** The registry's path prefix on the peers (`/ai/store/v1`). */
  storePrefix: string;
  /** The transfer's stall time; a node is left after the shorter of it and PEER_STALL_MS. */
  stallMs: number;
}

/** The path of a file on a node. */
export function peerFilePath(storePrefix: string, sha256: string): string {
  return `${storePrefix}/files/${sha256}`;
}

/** Nodes of `listed` of this node's account that advertise the file ready, idle ones first. */
export function holders(
  deps: Pick<MeshSourcesDeps, "identity">,
  listed: NodeDescription[],
  sha256: string,
): Array<{ node: NodeDescription; size: number; origin: string }> {
  const { nodeId, accountId } = deps.identity;
  if (accountId === "") return [];
  const found = [];
  for (const node of listed) {
    if (node.id === nodeId || node.accountId !== accountId) continue;
    const model = node.models?.find((m) => m.sha256 === sha256 && m.ready && m.size !== undefined);
    const local = node.addresses.find((address) => address.type === "local");
    if (!model || !local) continue;
    let origin: string;
    try {
      origin = new URL(local.url.href).origin;
    } catch {
      continue;
    }
    found.push({ node, size: model.size!, origin, busy: model.loaded });
  }
  // A node computing with the model is left to its work when another holds the file.
  return found.sort((a, b) => Number(a.busy) - Number(b.busy));
}

/** Whether the node at `origin` is `nodeId` (discovery's proof); a warning when it is not. */
async function provedAt(origin: string, nodeId: string, signal: AbortSignal): Promise<boolean> {
  try {
    await proveAt(origin, nodeId, signal);
    return true;
  } catch (error) {
    signal.throwIfAborted();
    console.warn(`model download: node ${nodeId} did not prove itself at ${origin}: ${error}`);
    return false;
  }
}

/** A node's file as a source: at `url`, with `headers` and the node's signature. */
function nodeSource(
  deps: MeshSourcesDeps,
  nodeId: string,
  size: number,
  url: string,
  path: string,
  headers: Record<string, string> = {},
): FileSource {
  return {
    url,
    label: { node: nodeId },
    size,
    stallMs: Math.min(PEER_STALL_MS, deps.stallMs),
    // A node that fails is left at once: the next node or the URL goes on from there.
    retries: 0,
    headers: async () => ({
      ...headers,
      [NODE_REQUEST_HEADER]: await deps.identity.signRequest({ to: nodeId, method: "GET", path }),
    }),
  };
}

/** The account's nodes behind the hub that hold the file (none on the LAN already). */
async function hubSources(
  deps: MeshSourcesDeps,
  sha256: string,
  skip: Set<string>,
  signal: AbortSignal,
): Promise<FileSource[]> {
  const { hub, identity } = deps;
  const token = identity.storedToken;
  if (!hub || !token) return [];
  const path = peerFilePath(deps.storePrefix, sha256);
  const sources: FileSource[] = [];
  try {
    const listed = await hub.list("account");
    for (const { node, size } of holders(deps, listed, sha256)) {
      if (skip.has(node.id)) continue;
      const route = await hubRoute({ hub, identity }, node.id, path, new Headers(), token, signal);
      const headers = Object.fromEntries(route.headers);
      sources.push(nodeSource(deps, node.id, size, route.url.href, path, headers));
    }
  } catch (error) {
    signal.throwIfAborted();
    console.warn(`model download: the hub's nodes cannot be asked: ${error}`);
  }
  return sources;
}

/** The mesh's sources of model files, for Provisioning.useMesh. */
export function meshSources(deps: MeshSourcesDeps): MeshFiles {
  return {
    async find(sha256, signal) {
      const mesh = deps.mesh();
      if (mesh === "off") return undefined;
      const sources: FileSource[] = [];
      const path = peerFilePath(deps.storePrefix, sha256);
      const lan = holders(deps, deps.members(), sha256);
      for (const { node, size, origin } of lan) {
        if (!await provedAt(origin, node.id, signal)) continue;
        sources.push(nodeSource(deps, node.id, size, `${origin}${path}`, path));
      }
      if (mesh !== "account") return sources;
      const onLan = new Set(lan.map(({ node }) => node.id));
      return [...sources, ...await hubSources(deps, sha256, onLan, signal)];
    },
  };
}
