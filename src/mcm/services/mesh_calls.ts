/**
 * `<nodeId>@mmesh/<path>` requests of microservices (ContainerCall `mesh`): the node finds the
 * node in its linkLocal view, takes its `type: "local"` address and sends the request to
 * `<href>/<path>` itself, the caller's method, headers and body kept, the answer streamed back
 * as ContainerEvents (its head, then its body's chunks) as it comes.
 *
 * The node sends it, not the container's process: that process's own permissions (--deny-net)
 * refuse loopback and the node's addresses, where nodes of one machine (and this node) are
 * reached. What is reached is exactly the origin the mesh advertises for that node, and only
 * once the node there proved it is that node (the proof discovery asks, peer_proof.ts; kept a
 * while): a peer's description is its own claim, and a peer that claimed `127.0.0.1:22` or a
 * metadata address would otherwise aim this node's requests there. A redirect is handed back
 * to the sandbox, not followed here (its target is not the mesh's): the sandbox follows a path
 * on that node as a mesh request, anything else as an ordinary one, which the microservice's
 * outbound policy judges (worker/mesh_fetch.ts).
 *
 * A node of the account that is not in the linkLocal view is reached through the hub, with the
 * caller's token (src/hub_client/hub_route.ts); without a token the mesh is the LAN, as the reference's.
 *
 * @module
 */
import type { ContainerCall } from "../../../gen/mcm/validators.ts";
import type { LinkLocal } from "../../discovery/link_local.ts";
import { proveAt } from "../../discovery/peer_proof.ts";
import { Invalid, NotFound, UpstreamFailed } from "../../errors/mod.ts";
import { sendChunks, StreamingAnswer } from "./container_calls.ts";
import {
  callerToken,
  hubRoute,
  type MeshHub,
  pathAt,
  unknownNode,
} from "../../hub_client/hub_route.ts";
import { TUNNEL_AUTHORIZATION_HEADER } from "../../tunnel/routing.ts";

/** The head of a mesh answer: its first ContainerEvent. */
export interface MeshHead {
  status: number;
  statusText: string;
  headers: [string, string][];
}

/** Where `nodeId`'s `path` is, by the mesh's view; NotFound for a node it does not list. */
export function meshTarget(
  linkLocal: Pick<LinkLocal, "members">,
  nodeId: string,
  path: string,
): URL {
  const node = linkLocal.members().find((member) => member.id === nodeId);
  // The reference's agent's words ("Cannot find node"), so that its callers match them.
  if (!node) throw unknownNode(nodeId);
  const local = node.addresses.find((address) => address.type === "local");
  if (!local) throw new NotFound(`Cannot find a local address of node ${nodeId}`);
  return pathAt(new URL(local.url.href), path, nodeId);
}

/**
 * Whether the node at `origin` is `nodeId` (discovery's proof, believed a while): UpstreamFailed
 * otherwise, as a node that does not answer: the request had no answer from that node.
 */
async function provenAt(origin: string, nodeId: string, signal: AbortSignal): Promise<void> {
  try {
    await proveAt(origin, nodeId, signal);
  } catch (error) {
    if (signal.aborted) throw error;
    throw new UpstreamFailed(
      `node ${nodeId}'s address ${origin} is not that node's (${(error as Error).message})`,
    );
  }
}

/** What the node knows of the mesh: its linkLocal view, and its hub when it has one. */
export interface MeshView {
  linkLocal: Pick<LinkLocal, "members">;
  hub?: MeshHub;
}

/** How the hint of a 404 ends when a hub could have reached the node with a token. */
const HUB_HINT = " (a node of the account elsewhere is reached through the hub with an edge " +
  "access token of the account, scope edge:clusters: send 'x-edge-authorization: Bearer <token>')";

/** One way to the node: where the request is sent, and with which headers. */
interface MeshRoute {
  url: URL;
  headers: Headers;
}

/**
 * The node's local address on the LAN once it proved itself there, with the caller's headers
 * less the hub's credential (a token for the account's nodes is the hub's business, never the
 * callee's); undefined for a node the LAN does not list.
 */
async function lanRoute(
  view: MeshView,
  nodeId: string,
  path: string,
  headers: Headers,
  signal: AbortSignal,
): Promise<MeshRoute | undefined> {
  if (!view.linkLocal.members().some((member) => member.id === nodeId)) return undefined;
  const url = meshTarget(view.linkLocal, nodeId, path);
  await provenAt(url.origin, nodeId, signal);
  const sent = new Headers(headers);
  sent.delete(TUNNEL_AUTHORIZATION_HEADER);
  return { url, headers: sent };
}

/**
 * Sends the request on the LAN when the node is there, else (or when it no longer answers there:
 * a node that left is listed a while) through the hub's tunnel, when the caller sent a token.
 */
async function sendOnMesh(
  view: MeshView,
  call: { nodeId: string; path: string; method: string; body: Uint8Array<ArrayBuffer> | null },
  headers: Headers,
  signal: AbortSignal,
): Promise<Response> {
  const { nodeId, path } = call;
  const token = callerToken(headers);
  const viaHub = view.hub && token
    ? async () => send(await hubRoute(view.hub!, nodeId, path, headers, token, signal))
    : undefined;
  const send = async (route: MeshRoute) => {
    try {
      return await fetch(route.url, {
        method: call.method,
        headers: route.headers,
        body: call.body,
        signal,
        redirect: "manual",
      });
    } catch (error) {
      if (signal.aborted) throw error;
      throw new UpstreamFailed(
        `node ${nodeId} (${route.url.origin}) did not answer: ${(error as Error).message}`,
      );
    }
  };
  try {
    const lan = await lanRoute(view, nodeId, path, headers, signal);
    if (lan) return await send(lan);
  } catch (error) {
    if (signal.aborted || !(error instanceof UpstreamFailed) || !viaHub) throw error;
  }
  if (!viaHub) throw unknownNode(nodeId, view.hub ? HUB_HINT : "");
  return await viaHub();
}

/**
 * Answers a `mesh` call: events `MeshHead`, then `{ chunk: <base64> }` for each part of the
 * body; the value (null) once it ended. Aborted (the container cancelled), the request stops.
 */
export function meshRequest(view: MeshView, call: ContainerCall): StreamingAnswer {
  const nodeId = call.node ?? "";
  let headers: Headers;
  try {
    headers = new Headers(call.headers ?? []);
  } catch (error) {
    throw new Invalid(`invalid request headers: ${(error as Error).message}`);
  }
  // The answer is relayed as its bytes come: not compressed on the way unless the caller asked
  // (a compressed stream comes in bursts, and fetch would inflate it behind the caller's back).
  if (!headers.has("accept-encoding")) headers.set("accept-encoding", "identity");
  const method = (call.method ?? "GET").toUpperCase();
  let body: Uint8Array<ArrayBuffer> | null = null;
  if (call.data !== undefined && method !== "GET" && method !== "HEAD") {
    try {
      body = Uint8Array.fromBase64(call.data) as Uint8Array<ArrayBuffer>;
    } catch {
      throw new Invalid("the request body ('data') is not base64");
    }
  }
  return new StreamingAnswer(async (emit, signal) => {
    const request = { nodeId, path: call.path ?? "", method, body };
    const response = await sendOnMesh(view, request, headers, signal);
    emit(
      {
        status: response.status,
        statusText: response.statusText,
        headers: [...response.headers],
      } satisfies MeshHead,
    );
    if (!response.body) return null;
    const reader = response.body.getReader();
    const stop = () => reader.cancel().catch(() => {});
    signal.addEventListener("abort", stop, { once: true });
    try {
      // Within the container's credit: what it does not read stays in the peer's socket.
      await sendChunks(reader, emit, signal);
      return null;
    } catch (error) {
      if (signal.aborted) throw error;
      throw new UpstreamFailed(
        `node ${call.node} broke off its answer: ${(error as Error).message}`,
      );
    } finally {
      signal.removeEventListener("abort", stop);
    }
  });
}
