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

/** Where a node is, and the credential to send (`Authorization: Bearer`). */
export interface NodeConnection {
  /** The node's base URL, such as `http://127.0.0.1:8083`. */
  url: string;
  /** The API key, the deployment key or an edge access token, as the service wants. */
  credential?: string;
}

/** The default path prefixes of the services. */
export const PREFIXES = { store: "/ai/store/v1", insight: "/mesh/insight/v1" } as const;

function options(connection: NodeConnection, prefix = "") {
  return {
    baseUrl: connection.url.replace(/\/$/, "") + prefix,
    headers: connection.credential ? { Authorization: `Bearer ${connection.credential}` } : {},
  };
}

/** The model registry (spec/store.yaml). */
export function storeClient(
  connection: NodeConnection,
  prefix: string = PREFIXES.store,
): Client<StorePaths> {
  return createClient<StorePaths>(options(connection, prefix));
}

/** The insight service (spec/insight.yaml). */
export function insightClient(
  connection: NodeConnection,
  prefix: string = PREFIXES.insight,
): Client<InsightPaths> {
  return createClient<InsightPaths>(options(connection, prefix));
}

/** Microservice deployment (spec/mcm.yaml); its paths carry /mcm/v1 themselves. */
export function mcmClient(connection: NodeConnection): Client<McmPaths> {
  return createClient<McmPaths>(options(connection));
}

/** The node listing (spec/mds.yaml). */
export function mdsClient(connection: NodeConnection): Client<MdsPaths> {
  return createClient<MdsPaths>(options(connection));
}

/** The dashboard's status endpoint (spec/dashboard.yaml). */
export function dashboardClient(connection: NodeConnection): Client<DashboardPaths> {
  return createClient<DashboardPaths>(options(connection));
}
