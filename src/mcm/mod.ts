/**
 * Microservices on the node (spec/mcm.yaml): images, deployments and their containers, the
 * container processes and their sandbox, and the node's answers to a container's calls. The
 * node assembles it from these files; the single executable runs a container process with
 * runContainerProcess.
 *
 * @module
 */
export * from "./images/bundle_files.ts";
export * from "./deployments.ts";
export * from "./gateway.ts";
export * from "./images/images.ts";
export * from "./mcm_records.ts";
export * from "./services/node_services.ts";
export * from "./routes.ts";
export * from "./sandbox/host/container_workers.ts";
export * from "./service.ts";
