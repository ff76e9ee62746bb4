/**
 * What the node's containers are given (Deployments, deployments.ts): the mcm settings, the
 * facts and services of the node they run on, and the names the reference gives them.
 *
 * @module
 */
import type { McmConfig } from "../../gen/config/validators.ts";
import type { ContainerCall } from "../../gen/mcm/validators.ts";
import type { CallerUsage } from "../inference/caller_usage.ts";
import type { ContainerRecord } from "./mcm_records.ts";
import type { ContainerRuntime } from "./runtime/container_runtime.ts";
import type { NetworkClass } from "./sandbox/channel_protocol.ts";

/**
 * The node's mcm settings: spec/config.yaml's McmConfig with every default applied (only
 * `outboundHosts` may stay unset: any host).
 */
export type McmSettings =
  & Required<Omit<McmConfig, "outboundHosts" | "outboundNetworks">>
  & { outboundHosts: string[] | undefined; outboundNetworks: NetworkClass[] };

/** What deployments need to know about the node. */
export interface NodeFacts {
  nodeId(): string;
  accountId(): string;
  port(): number;
  /** Path prefixes the node serves itself: no alias may shadow them. */
  reservedPrefixes: string[];
  readEnv(name: string): string | undefined;
  /** The node's own addresses (microservices may not reach them unless allowed). */
  ownAddresses(): string[];
  /** Answers a container's call to its node (spec/mcm.yaml, ContainerCall). */
  answerCall(container: string, call: ContainerCall): Promise<unknown>;
  /** What a container's `context.ml` calls used of the engine; undefined before any. */
  inferenceUsage?(container: string): CallerUsage | undefined;
  /** Forgets a deleted container's engine figures. */
  forgetContainer?(container: string): void;
}

/** Where a request path leads. */
export type Match =
  | { runtime: ContainerRuntime; path: string }
  | { unknown: string };

/**
 * A container's service type as the reference advertises it (in listings and in
 * `context.info.serviceType`): `<clientId>-<container name>`. Agents find a peer's microservice
 * by it, and take the clientId back as its first 36 characters.
 */
export function serviceTypeOf(record: Pick<ContainerRecord, "client" | "name">): string {
  return `${record.client}-${record.name}`;
}
