/**
 * The insight service (spec/insight.yaml): the stored account token, information on this node,
 * its supernode and its hub endpoints, and node listings (link-local from discovery, account and
 * proximity from the hub).
 *
 * @module
 */
export * from "./routes.ts";
export * from "./service.ts";
