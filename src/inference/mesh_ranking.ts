/**
 * Which node of the mesh answers a request this node cannot serve now (issue 37), from the
 * models the nodes advertise in their signed descriptions (spec/mds.yaml "Models"): nothing
 * here speaks HTTP (mesh_forward.ts sends the request).
 *
 * Only nodes of this node's account are candidates: on the LAN, a verified member whose
 * description names the account; through the hub, the account's listing. Their order:
 *
 * 1. the model loaded with a free sequence;
 * 2. the model loaded, the shortest queue first;
 * 3. the model ready on disk (a peer's free memory is not advertised: ready is enough);
 *
 * at equal rank a LAN node before a node reached through the hub, then the order of the listing.
 * A node both on the LAN and in the hub's listing is a LAN node.
 *
 * A LAN node's free sequences and queue are not known here: its description is fetched again
 * only when its announcement changes, and the figures, which change with every request, are not
 * part of it, so the ones at hand may be minutes old. A LAN node with the model loaded thus
 * ranks as having a free sequence; one that has none refuses at once (429), and the next is
 * tried. Through the hub the figures are at most LIVE_FIGURES_MS (10 s, hub_client's
 * description_updates.ts) old: hints, by which the account's nodes are ordered.
 *
 * @module
 */
import type { ModelAdvert, NodeDescription } from "../../gen/mds/validators.ts";

/** How a node of the mesh is reached: on the LAN, or through the hub. */
export type MeshVia = "lan" | "hub";

/** `inference.mesh` (spec/config.yaml): where requests may be routed. */
export type MeshScope = "off" | "lan" | "account";

/** A node that may answer, the model as it advertises it, and how it is reached. */
export interface MeshCandidate {
  node: NodeDescription;
  via: MeshVia;
  model: ModelAdvert;
}

/** The nodes this node sees: its LAN members and (scope "account") the hub's account listing. */
export interface MeshNodes {
  lan: readonly NodeDescription[];
  hub: readonly NodeDescription[];
}

/** This node, as the choice needs it. */
export interface MeshSelf {
  nodeId: string;
  /** "" for a node without an account: it routes nothing. */
  accountId: string;
}

/** The registry kinds each routed operation runs on. */
export const CHAT_KINDS: readonly string[] = ["llm", "vlm"];
export const EMBED_KINDS: readonly string[] = ["embed"];

/**
 * Loaded with a free sequence, loaded, ready; undefined for a model that is not ready. A LAN
 * node's figures are stale: loaded is all that counts there.
 */
function rankOf(model: ModelAdvert, via: MeshVia): number | undefined {
  if (!model.ready) return undefined;
  if (model.loaded) return via === "lan" || (model.freeSlots ?? 0) > 0 ? 0 : 1;
  return 2;
}

/**
 * Every node of the account (not this one) that advertises `modelId` ready (a kind of `kinds`),
 * each once, in the order they should be tried.
 */
export function meshCandidates(
  modelId: string,
  kinds: readonly string[],
  nodes: MeshNodes,
  self: MeshSelf,
): MeshCandidate[] {
  if (self.accountId === "") return [];
  const seen = new Set<string>([self.nodeId]);
  const found: (MeshCandidate & { rank: number; order: number })[] = [];
  const consider = (node: NodeDescription, via: MeshVia) => {
    if (seen.has(node.id) || node.accountId !== self.accountId) return;
    const model = node.models?.find((m) => m.id === modelId && kinds.includes(m.kind));
    const rank = model && rankOf(model, via);
    if (!model || rank === undefined) return;
    seen.add(node.id);
    found.push({ node, via, model, rank, order: found.length });
  };
  for (const node of nodes.lan) consider(node, "lan");
  for (const node of nodes.hub) consider(node, "hub");
  return found
    .sort((a, b) =>
      a.rank - b.rank ||
      (a.rank === 1 ? (a.model.queued ?? 0) - (b.model.queued ?? 0) : 0) ||
      (a.via === b.via ? 0 : a.via === "lan" ? -1 : 1) ||
      a.order - b.order
    )
    .map(({ node, via, model }) => ({ node, via, model }));
}

/** Where one model of the mesh is: `GET …/models?scope=mesh`. */
export interface MeshModelPlace {
  nodeId: string;
  name: string;
  /** "self" for this node. */
  via: MeshVia | "self";
  ready: boolean;
  loaded: boolean;
}

/** One model of the mesh and the nodes that hold it. */
export interface MeshModel {
  id: string;
  kind: string;
  nodes: MeshModelPlace[];
}

/**
 * The models of the account's nodes (this node's first, whatever its account), by id, with
 * where each is; a node both on the LAN and through the hub is listed once, as a LAN node.
 */
export function meshModels(
  self: MeshSelf & { name: string; models: readonly ModelAdvert[] },
  nodes: MeshNodes,
): MeshModel[] {
  const byId = new Map<string, MeshModel>();
  const add = (nodeId: string, name: string, via: MeshModelPlace["via"], model: ModelAdvert) => {
    let entry = byId.get(model.id);
    if (!entry) byId.set(model.id, entry = { id: model.id, kind: model.kind, nodes: [] });
    entry.nodes.push({ nodeId, name, via, ready: model.ready, loaded: model.loaded });
  };
  for (const model of self.models) add(self.nodeId, self.name, "self", model);
  const seen = new Set<string>([self.nodeId]);
  const visit = (node: NodeDescription, via: MeshVia) => {
    if (seen.has(node.id) || self.accountId === "" || node.accountId !== self.accountId) return;
    seen.add(node.id);
    for (const model of node.models ?? []) add(node.id, node.name, via, model);
  };
  for (const node of nodes.lan) visit(node, "lan");
  for (const node of nodes.hub) visit(node, "hub");
  return [...byId.values()];
}
