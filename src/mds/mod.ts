/**
 * The mds service (spec/mds.yaml), GET /mds/v1/nodes: the encrypted node listings and the ping
 * that peers use to check each other, and the shapes of a node in the mds and insight listings.
 *
 * @module
 */
export * from "./listing.ts";
export * from "./mesh_handlers.ts";
export * from "./routes.ts";
export * from "./service.ts";
