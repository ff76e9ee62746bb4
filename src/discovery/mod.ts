/**
 * Link-local discovery: the mDNS socket, records and responder, the checks of peers' proofs,
 * the members of the local network and the election of its supernode, and what this node says
 * of itself.
 *
 * @module
 */
export * from "./link_local.ts";
export * from "./mdns_socket.ts";
export * from "./peer_proof.ts";
export * from "./self_description.ts";
