/**
 * Node descriptions as the two listings show them: the spec's mds Node (decrypted listing) and
 * the insight Node.
 *
 * @module
 */
import type { Node as InsightNode } from "../../gen/insight/validators.ts";
import type { LocalLinkListing, MdsNode, NodeDescription } from "../../gen/mds/validators.ts";
import type { LinkLocal } from "../discovery/link_local.ts";

/** The role of the elected supernode in `rolesInCluster`. */
export const SUPERNODE_ROLE = "superNodeLocalLinkNetwork";

/** The API version of mds nodes. */
const API_VERSION = "v1";

function accountLink(accountId: string) {
  return { id: accountId, self: accountId ? `/accounts/${accountId}` : "" };
}

/** A node of the decrypted mds listing. */
export function mdsNode(node: NodeDescription, roles: string[]): MdsNode {
  const first = node.addresses[0]?.url.href;
  const account = accountLink(node.accountId);
  return {
    APIVersion: API_VERSION,
    account,
    addresses: node.addresses,
    attributes: [{ name: "name", value: node.name }],
    characteristics: node.characteristics,
    id: node.id,
    localLinkNetworkId: node.localLinkNetworkId,
    networkAddress: first ? new URL(first).hostname.replace(/^\[|\]$/g, "") : "",
    rolesInCluster: roles,
    services: node.services.map((s) => ({ id: s.id, serviceType: s.serviceType, tenant: account })),
    startedAt: node.startedAt,
    tenant: account,
    // An extension: the reference's listing has no models, and its clients ignore what they
    // do not know. The listing is encrypted for the account's token holders only.
    ...(node.models ? { models: node.models } : {}),
    ...(node.backend ? { backend: node.backend } : {}),
  };
}

/** What a listing reads of link-local discovery: its network, members and supernode. */
export type LinkLocalView = Pick<LinkLocal, "networkId" | "members" | "supernode">;

/** The decrypted linkLocal listing: the members as discovery orders them, the supernode with its role. */
export function localLinkListing(linkLocal: LinkLocalView): LocalLinkListing {
  const supernode = linkLocal.supernode();
  return {
    localLinkNetwork: {
      localLinkNetworkId: linkLocal.networkId,
      nodes: linkLocal.members().map((node) =>
        mdsNode(node, node.id === supernode.id ? [SUPERNODE_ROLE] : [])
      ),
    },
  };
}

/** A node as insight lists it. */
export function insightNode(node: NodeDescription): InsightNode {
  return {
    id: node.id,
    accountId: node.accountId,
    name: node.name,
    os: node.os,
    addresses: node.addresses,
    services: node.services,
    ...(node.models ? { models: node.models } : {}),
    ...(node.backend ? { backend: node.backend } : {}),
  };
}
