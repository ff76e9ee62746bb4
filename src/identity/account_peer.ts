/**
 * Whether a node-signed request (node_request.ts) comes from a node of this node's account, the
 * way listings trust nodes: on the LAN, a peer discovery verified (its proof) whose signed
 * description names this account; through the hub, a request whose token the hub verified for
 * this account. A node of another account, or one nobody verified, is refused.
 *
 * @module
 */
import { Forbidden, Unauthenticated } from "../errors/mod.ts";
import { ProofError } from "./node_proof.ts";
import { verifyNodeRequest } from "./node_request.ts";

/** What the check needs of the request, as the receiving node saw it. */
export interface PeerRequest {
  method: string;
  /** The path and query, as received. */
  path: string;
  /** The NODE_REQUEST_HEADER's value; null without one. */
  signature: string | null;
  /** The account the hub verified the caller's token for (a tunnelled request only). */
  hubAccount?: string;
}

/** What the check needs of this node. */
export interface PeerCheck {
  nodeId: string;
  accountId: string;
  /** The account a verified LAN peer's description names; undefined for a node not listed. */
  lanAccountOf(nodeId: string): string | undefined;
}

/**
 * The id of the node of this account that sent `request`; Unauthenticated without a signature,
 * Forbidden for one that does not verify or a node that is not of the account.
 */
export async function accountPeer(self: PeerCheck, request: PeerRequest): Promise<string> {
  if (request.signature === null) {
    throw new Unauthenticated("a node's request must be signed (x-edge-node-request)");
  }
  let sender: string;
  try {
    sender = await verifyNodeRequest(request.signature, {
      to: self.nodeId,
      method: request.method,
      path: request.path,
    });
  } catch (error) {
    if (error instanceof ProofError) throw new Forbidden(error.message);
    throw error;
  }
  if (self.accountId === "") {
    throw new Forbidden("this node has no account: it serves no other node's requests");
  }
  // The hub's word is about the caller's token; the signature says which node sent it.
  const account = request.hubAccount ?? self.lanAccountOf(sender);
  if (account !== self.accountId) {
    throw new Forbidden(
      account === undefined
        ? `node ${sender} is not a verified peer of this node's network, nor came through the hub`
        : `node ${sender} is not of this node's account`,
    );
  }
  return sender;
}
