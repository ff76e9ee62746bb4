/**
 * Microservices on the node (spec/mcm.yaml): images, deployments and their containers, the
 * container processes and their sandbox, and the node's answers to a container's calls. The
 * node assembles it from these files.
 *
 * @module
 */
export * from "./bundle_files.ts";
export * from "./deployments.ts";
export * from "./gateway.ts";
export * from "./images.ts";
export * from "./mcm_records.ts";
export * from "./node_services.ts";
export * from "./routes.ts";
export * from "./service.ts";
