/**
 * Who the node is: its Ed25519 key and the id derived from it, proofs of holding it (signed for
 * peers and the hub, verified from them), the account, GPS fix and stored token, the
 * verification of tokens from trusted issuers, and the local issuer of the CLI.
 *
 * @module
 */
export * from "./account_peer.ts";
export * from "./identity.ts";
export * from "./issuer.ts";
export * from "./node_proof.ts";
export * from "./node_request.ts";
export * from "./token_verifier.ts";
