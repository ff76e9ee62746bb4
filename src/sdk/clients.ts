/**
 * Typed HTTP clients of a node's services, from the generated OpenAPI types (openapi-fetch):
 * one per spec. They are what the CLI uses, and what other programs can import.
 *
 * @module
 */
import createClient, { type Client } from "openapi-fetch";
import type { paths as DashboardPaths } from "../../gen/dashboard/types.ts";
import type { paths as InsightPaths } from "../../gen/insight/types.ts";
import type { paths as McmPaths } from "../../gen/mcm/types.ts";
import type { paths as MdsPaths } from "../../gen/mds/types.ts";
import type { paths as StorePaths } from "../../gen/store/types.ts";
import { nodeFetch } from "./node_errors.ts";

/*
 * The client types below are openapi-fetch's `Client` over a spec's generated `paths`: both are
 * documented where they come from (openapi-fetch, gen/<service>/types.ts), not again here, so
 * they are marked `@internal` for `deno doc --lint`, which would otherwise ask the SDK to export
 * openapi-fetch's and valibot's own types.
 */

/**
 * A typed client of the model registry (spec/store.yaml).
 *
 * @internal openapi-fetch's `Client` over gen/store/types.ts's `paths`.
 */
export type StoreClient = Client<StorePaths>;

/**
 * A typed client of the insight service (spec/insight.yaml).
 *
 * @internal openapi-fetch's `Client` over gen/insight/types.ts's `paths`.
 */
export type InsightClient = Client<InsightPaths>;

/**
 * A typed client of microservice deployment (spec/mcm.yaml).
 *
 * @internal openapi-fetch's `Client` over gen/mcm/types.ts's `paths`.
 */
export type McmClient = Client<McmPaths>;

/**
 * A typed client of the node listing (spec/mds.yaml).
 *
 * @internal openapi-fetch's `Client` over gen/mds/types.ts's `paths`.
 */
export type MdsClient = Client<MdsPaths>;

/**
 * A typed client of the dashboard's status endpoint (spec/dashboard.yaml).
 *
 * @internal openapi-fetch's `Client` over gen/dashboard/types.ts's `paths`.
 */
export type DashboardClient = Client<DashboardPaths>;

/** Where a node is, and the credential to send (`Authorization: Bearer`). */
export interface NodeConnection {
  /** The node's base URL, such as `http://127.0.0.1:8083`. */
  url: string;
  /** The API key, the deployment key or an edge access token, as the service wants. */
  credential?: string;
}

/** The default path prefixes of the services. */
export const PREFIXES = { store: "/ai/store/v1", insight: "/mesh/insight/v1" } as const;

/** A client's options: a failed connection throws NodeUnreachableError naming the node. */
function options(
  connection: NodeConnection,
  prefix = "",
): { baseUrl: string; headers: Record<string, string>; fetch: typeof fetch } {
  const url = connection.url.replace(/\/$/, "");
  return {
    baseUrl: url + prefix,
    headers: connection.credential ? { Authorization: `Bearer ${connection.credential}` } : {},
    fetch: nodeFetch(url),
  };
}

/** The model registry (spec/store.yaml). */
export function storeClient(
  connection: NodeConnection,
  prefix: string = PREFIXES.store,
): StoreClient {
  return createClient<StorePaths>(options(connection, prefix));
}

/** The insight service (spec/insight.yaml). */
export function insightClient(
  connection: NodeConnection,
  prefix: string = PREFIXES.insight,
): InsightClient {
  return createClient<InsightPaths>(options(connection, prefix));
}

/**
 * Microservice deployment (spec/mcm.yaml). As the spec's server is the node's origin and its
 * paths carry /mcm/v1 themselves, the client's base URL is the node's URL, with no prefix.
 */
export function mcmClient(connection: NodeConnection): McmClient {
  return createClient<McmPaths>(options(connection));
}

/** The node listing (spec/mds.yaml). */
export function mdsClient(connection: NodeConnection): MdsClient {
  return createClient<MdsPaths>(options(connection));
}

/** The dashboard's status endpoint (spec/dashboard.yaml). */
export function dashboardClient(connection: NodeConnection): DashboardClient {
  return createClient<DashboardPaths>(options(connection));
}
