/**
 * The account and proximity listings of the hub (spec/hub.yaml, "Listings"): who is listed, in
 * which order, and how much of a node another account may see.
 *
 * @module
 */
import type { GpsPoint } from "../../gen/hub/validators.ts";
import type { NodeDescription } from "../../gen/mds/validators.ts";

/** What the hub knows of a connected node. */
export interface ConnectedNode {
  node: NodeDescription;
  fix: GpsPoint | undefined;
  publicAddress: string;
}

const EARTH_RADIUS_KM = 6371.0088;

/** Great-circle distance between two fixes, in km (haversine). */
export function distanceKm(a: GpsPoint, b: GpsPoint): number {
  const rad = Math.PI / 180;
  const dLat = (b.latitude - a.latitude) * rad;
  const dLon = (b.longitude - a.longitude) * rad;
  const h = Math.sin(dLat / 2) ** 2 +
    Math.cos(a.latitude * rad) * Math.cos(b.latitude * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** A node of the caller's own account, as it signed itself plus the hub's tunnel address. */
function ownView(node: NodeDescription, sepUrl: string): NodeDescription {
  return { ...node, addresses: [...node.addresses, { type: "proxy", url: { href: sepUrl } }] };
}

/** A node of another account: who it is, and its local addresses only on the same network. */
function strangerView(entry: ConnectedNode, caller: ConnectedNode): NodeDescription {
  // What it runs is its account's business: models and backend are left out with the services.
  const { models: _models, backend: _backend, ...node } = entry.node;
  return {
    ...node,
    version: "",
    addresses: entry.publicAddress === caller.publicAddress ? node.addresses : [],
    services: [],
    characteristics: [],
  };
}

/** The caller's account, connected now: the caller first, then by name. */
export function accountListing(
  caller: ConnectedNode,
  connected: Iterable<ConnectedNode>,
  sepUrl: string,
): NodeDescription[] {
  const own = [...connected].filter((e) =>
    e.node.accountId === caller.node.accountId && e.node.id !== caller.node.id
  );
  own.sort((a, b) => a.node.name.localeCompare(b.node.name) || a.node.id.localeCompare(b.node.id));
  return [caller, ...own].map((e) => ownView(e.node, sepUrl));
}

/**
 * Nodes near the caller: by distance within `radiusKm` when it has a fix, then those without a
 * fix behind the caller's public address. The caller first.
 */
export function proximityListing(
  caller: ConnectedNode,
  connected: Iterable<ConnectedNode>,
  radiusKm: number,
  sepUrl: string,
): NodeDescription[] {
  const others = [...connected].filter((e) => e.node.id !== caller.node.id);
  const near: { entry: ConnectedNode; km: number }[] = [];
  if (caller.fix) {
    for (const entry of others) {
      if (!entry.fix) continue;
      const km = distanceKm(caller.fix, entry.fix);
      if (km <= radiusKm) near.push({ entry, km });
    }
    near.sort((a, b) => a.km - b.km || a.entry.node.id.localeCompare(b.entry.node.id));
  }
  const sameNetwork = others
    .filter((e) => !(caller.fix && e.fix) && e.publicAddress === caller.publicAddress)
    .sort((a, b) => a.node.id.localeCompare(b.node.id));
  return [caller, ...near.map((n) => n.entry), ...sameNetwork].map((entry) =>
    entry.node.accountId === caller.node.accountId
      ? ownView(entry.node, sepUrl)
      : strangerView(entry, caller)
  );
}
