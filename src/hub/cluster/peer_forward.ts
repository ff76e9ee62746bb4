/**
 * Tunnelled requests between the hubs of a cluster (spec/hub.yaml, "Hub clusters"): hub A, which
 * took a request for a node connected to hub B, sends it to B over plain HTTP, bodies streaming
 * both ways (TCP's own flow control, and cancellation by closing the connection). NATS only tells
 * A where B is. The request is marked with a header signed with the cluster key, binding the
 * sending hub, the time, the method, path, target node and the original client's address; B
 * serves it only from its own connection to the node, re-checks the caller's token itself, and
 * never forwards it again.
 *
 * @module
 */
import { Forbidden, UpstreamFailed } from "../../errors/mod.ts";
import type { ClusterKey } from "./cluster_key.ts";
import type { RemoteNode } from "./cluster_presence.ts";
import {
  HUB_CLIENT_HEADER,
  HUB_FORWARD_HEADER,
  tunnelAddress,
  tunnelToken,
} from "../../tunnel/routing.ts";

/**
 * The signed mark of a request forwarded by a hub, `<hub id>.<ms since epoch>.<mac>`, and the
 * original client's address as hub A saw it (covered by the mark). Named in ../../tunnel/
 * routing.ts, whose rules drop both before a request goes to a node.
 */
export { HUB_CLIENT_HEADER, HUB_FORWARD_HEADER };
/** How far a mark's time may be from the receiving hub's clock. */
const MARK_WINDOW_MS = 60_000;
/**
 * First line of every signed mark: its version, and what keeps its MAC apart from those of
 * records the same key seals (cluster_key.ts).
 */
const MARK_DOMAIN = "edgenode hub forward 2";

/** Headers not passed from hub to hub (hop-by-hop, and the marks, set afresh). */
const HOP_HEADERS = [
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "host",
  "te",
  "trailer",
  HUB_FORWARD_HEADER,
  HUB_CLIENT_HEADER,
];

/**
 * What a mark's MAC covers: everything a replayer could swap while keeping the mark. Header values
 * hold no line breaks, so the lines cannot be shifted into one another.
 */
function markText(hubId: string, at: number, request: Request, nodeId: string, client: string) {
  return [
    MARK_DOMAIN,
    hubId,
    at,
    request.method,
    pathOf(request.url),
    nodeId,
    tunnelAddress(request.headers).port ?? "",
    client,
    tunnelToken(request.headers) ?? "",
  ].join("\n");
}

/** The path and query of `url`. */
function pathOf(url: string): string {
  return url.slice(url.indexOf("/", url.indexOf("//") + 2));
}

/**
 * Sends `request` (for node `nodeId`, from `client`) to the hub holding the node, and returns
 * its answer as it streams in.
 */
export async function forwardToPeer(
  key: ClusterKey,
  hubId: string,
  peer: RemoteNode,
  request: Request,
  client: string,
): Promise<Response> {
  const headers = new Headers(request.headers);
  for (const name of HOP_HEADERS) headers.delete(name);
  const at = Date.now();
  const nodeId = peer.entry.node.id;
  headers.set(
    HUB_FORWARD_HEADER,
    `${hubId}.${at}.${key.mac(markText(hubId, at, request, nodeId, client))}`,
  );
  headers.set(HUB_CLIENT_HEADER, client);
  let response: Response;
  try {
    response = await fetch(`${peer.hubUrl}${pathOf(request.url)}`, {
      method: request.method,
      headers,
      body: request.body,
      redirect: "manual",
      signal: request.signal,
    });
  } catch (error) {
    throw new UpstreamFailed(
      `the hub holding node ${nodeId} (${peer.hubUrl}) could not be reached: ${
        (error as Error).message
      }; retry: the node reconnects to a live hub within seconds`,
    );
  }
  const answer = new Headers(response.headers);
  // fetch has decoded a compressed body already: pass it on as what it now is.
  if (answer.has("content-encoding")) {
    answer.delete("content-encoding");
    answer.delete("content-length");
  }
  return new Response(response.body, { status: response.status, headers: answer });
}

/**
 * The original client of a request another hub forwarded; undefined when the request was not
 * forwarded. Throws Forbidden when the mark is not the cluster's, or too old.
 */
export function forwardedClient(
  key: ClusterKey | undefined,
  request: Request,
  nodeId: string,
): string | undefined {
  const mark = request.headers.get(HUB_FORWARD_HEADER);
  if (mark === null) return undefined;
  const [hubId, atText, mac] = mark.split(".");
  const at = Number(atText);
  const client = request.headers.get(HUB_CLIENT_HEADER) ?? "";
  if (
    !key || !hubId || !mac || !Number.isSafeInteger(at) ||
    Math.abs(Date.now() - at) > MARK_WINDOW_MS ||
    !key.verify(markText(hubId, at, request, nodeId, client), mac)
  ) {
    throw new Forbidden(
      `${HUB_FORWARD_HEADER} is not signed by a hub of this cluster for this request (or is ` +
        "over a minute old): it is set by hubs only; send the request without it",
    );
  }
  return client;
}
