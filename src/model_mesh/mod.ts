/**
 * The mesh's models, as this node uses them: the nodes of its account that hold a model file
 * (its sha256) and can send it, found in the LAN's verified adverts and the hub's account
 * listing, each asked with a request signed by this node's key.
 *
 * @module
 */
export * from "./file_sources.ts";
