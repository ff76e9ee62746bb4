/**
 * The mesh as the OpenAI-compatible API's handlers see it (issue 37): the nodes that may answer
 * a request this node cannot serve now (mesh_ranking.ts chooses, mesh_forward.ts sends), the
 * check of a request another node routed here, and the mesh's models. Discovery and the hub link
 * are given as functions: this package does not import them.
 *
 * @module
 */
import type { ModelAdvert, NodeDescription } from "../../gen/mds/validators.ts";
import { Forbidden } from "../errors/mod.ts";
import { accountPeer, NODE_REQUEST_HEADER, type NodeRequestClaims } from "../identity/mod.ts";
import { type Forwarded, type ForwardResult, forwardToMesh } from "./mesh_forward.ts";
import { RecentCache } from "./recent_cache.ts";
import {
  meshCandidates,
  type MeshModel,
  meshModels,
  type MeshNodes,
  type MeshScope,
} from "./mesh_ranking.ts";

/** What the router needs of the node. */
export interface MeshParts {
  /** `inference.mesh`. */
  scope: MeshScope;
  identity: {
    readonly nodeId: string;
    readonly accountId: string;
    readonly name: string;
    readonly storedToken: string | undefined;
    signRequest(claims: Omit<NodeRequestClaims, "from">): Promise<string>;
  };
  /** The verified LAN members (this node among them). */
  lanMembers(): NodeDescription[];
  /** The hub link, when the node has one: its account listing (cached by the caller), its URL. */
  hub?: { accountNodes(): Promise<NodeDescription[]>; url(): string };
  /**
   * Makes sure the node at `origin` is `nodeId` (discovery's `proveAt`, believed a while, or a
   * fresh proof with `fresh`); rejects otherwise.
   */
  prove(origin: string, nodeId: string, signal: AbortSignal, fresh?: boolean): Promise<void>;
  /** This node's own models advert. */
  ownModels(): readonly ModelAdvert[];
}

/**
 * How long this node reuses its signature of one request line (to, method, path): it is valid
 * a minute at the receiver whatever this node does, so reusing it a few seconds gives nothing
 * more away, and a burst of requests signs once.
 */
const SIGNATURE_REUSE_MS = 10_000;
/**
 * How long a routed request's check is reused for the same signature, method, path and hub
 * account: a signature is thus accepted at most a few seconds beyond its minute, and a peer
 * that left the LAN is refused a few seconds late.
 */
const CHECK_REUSE_MS = 5_000;

/** The mesh of one node. */
export class MeshRouter {
  readonly #parts: MeshParts;
  readonly #signatures = new RecentCache<string>(SIGNATURE_REUSE_MS, 256);
  readonly #checked = new RecentCache<string>(CHECK_REUSE_MS, 1024);

  constructor(parts: MeshParts) {
    this.#parts = parts;
  }

  /** This node's id. */
  get nodeId(): string {
    return this.#parts.identity.nodeId;
  }

  /** `inference.mesh`. */
  get scope(): MeshScope {
    return this.#parts.scope;
  }

  /** The nodes the scope allows: the LAN's, and (scope "account") the hub's account listing. */
  async nodes(): Promise<MeshNodes> {
    const { scope, hub } = this.#parts;
    if (scope === "off") return { lan: [], hub: [] };
    const lan = this.#parts.lanMembers();
    if (scope !== "account" || !hub) return { lan, hub: [] };
    return { lan, hub: await hub.accountNodes().catch(() => []) };
  }

  /**
   * Sends `request` for `model` to the nodes that advertise it (of `kinds`), best first;
   * `served: false` when none exists or none answered.
   */
  async forward(
    model: string,
    kinds: readonly string[],
    request: Forwarded,
  ): Promise<ForwardResult> {
    if (this.scope === "off") return { served: false, failures: [] };
    const { identity, hub } = this.#parts;
    const candidates = meshCandidates(model, kinds, await this.nodes(), identity);
    if (candidates.length === 0) return { served: false, failures: [] };
    return await forwardToMesh(
      {
        signRequest: (claims) =>
          this.#signatures.through(
            `${claims.to} ${claims.method} ${claims.path}`,
            () => identity.signRequest(claims),
          ),
        storedToken: () => identity.storedToken,
        hubUrl: () => hub?.url(),
        prove: this.#parts.prove,
      },
      candidates,
      request,
    );
  }

  /** Whether the request was routed here by another node (it carries a node's signature). */
  isRouted(request: Request): boolean {
    return request.headers.has(NODE_REQUEST_HEADER);
  }

  /**
   * The id of the node of this account that routed `request` here (accountPeer's rule: a
   * verified LAN member of the account, or a request the hub verified for it); Forbidden with
   * `inference.mesh` "off" (and for a request through the hub with "lan": spec/config.yaml),
   * Unauthenticated or Forbidden for any other sender.
   */
  async peerOf(
    request: Request,
    seen: { path: string; search: string; hubAccount: string | undefined },
  ): Promise<string> {
    if (this.scope === "off") {
      throw new Forbidden("this node serves no routed requests (inference.mesh is off)");
    }
    if (this.scope === "lan" && seen.hubAccount !== undefined) {
      throw new Forbidden(
        "this node serves routed requests of its LAN's nodes only (inference.mesh is lan)",
      );
    }
    const { identity } = this.#parts;
    const signature = request.headers.get(NODE_REQUEST_HEADER);
    const path = seen.path + seen.search;
    const key = `${signature}\n${request.method} ${path}\n${seen.hubAccount ?? ""}`;
    return await this.#checked.through(key, () =>
      accountPeer({
        nodeId: identity.nodeId,
        accountId: identity.accountId,
        // This node's own description is among the members: it is no peer of itself.
        lanAccountOf: (id) =>
          id === identity.nodeId
            ? undefined
            : this.#parts.lanMembers().find((m) => m.id === id)?.accountId,
      }, {
        method: request.method,
        path,
        signature,
        hubAccount: seen.hubAccount,
      }));
  }

  /** The mesh's models with where each is, this node's first. */
  async models(): Promise<MeshModel[]> {
    const { identity } = this.#parts;
    return meshModels(
      {
        nodeId: identity.nodeId,
        accountId: identity.accountId,
        name: identity.name,
        models: this.#parts.ownModels(),
      },
      await this.nodes(),
    );
  }
}
