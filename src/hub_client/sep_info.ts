/**
 * The bep and sep sections of the node's insight info (spec/insight.yaml), and the sep's
 * self-check: this node pinged through its hub, as the reference does.
 *
 * @module
 */
import type { PORT_HEADER, ROUTING_HEADER } from "../tunnel/routing.ts";

/** How long the sep's self-check may take. */
const PING_TIMEOUT_MS = 5000;

/** The spec's bep section. */
export interface BepInfo {
  url: string;
  status: string;
}

/** The spec's sep section. */
export interface SepInfo {
  nodeId: string;
  url: string;
  headers: { [PORT_HEADER]: string; [ROUTING_HEADER]: string };
  status: string;
}

/**
 * "success" when a ping of node `nodeId` through the hub at `url` (with the sep `headers` and the
 * node's account `token`) comes back from this node, otherwise "failed: <why>".
 */
export async function pingThroughHub(
  url: string,
  headers: Record<string, string>,
  token: string,
  nodeId: string,
): Promise<string> {
  try {
    const response = await fetch(`${url}/mds/v1/nodes?ping=true`, {
      headers: { ...headers, Authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(PING_TIMEOUT_MS),
    });
    const body = await response.json().catch(() => undefined);
    if (!response.ok) {
      return `failed: the hub answered ${response.status} ${body?.message ?? ""}`.trim();
    }
    return body?.data?.id === nodeId ? "success" : "failed: wrong nodeId";
  } catch (error) {
    return `failed: ${(error as Error).message}`;
  }
}
