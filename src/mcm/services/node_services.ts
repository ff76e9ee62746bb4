/**
 * What the node answers to its microservices' calls (spec/mcm.yaml, ContainerCall): the node
 * listing the reference's microservices fetch from `localhost:<httpPort>/mds/v1/nodes` without
 * credentials, its decryption with the caller's edge access token
 * (`context.edge.decryptEncryptedNodesJson`), and the BEP (`context.edge.requestBep`).
 *
 * A listing handed to a container is encrypted (JWE `dir` + A256GCM) under a key that only this
 * node process holds, marked `kid: "edgenode-container"`: the microservice cannot read it, and
 * only a valid token of the node's account with scope `edge:clusters` opens it. Listings that
 * came over HTTP (encrypted for a token, spec/mds.yaml) open with that same token.
 *
 * `context.ml`'s chat completions and embeddings run on the node's inference (ml_calls.ts);
 * `<nodeId>@mmesh/<path>` requests go to that node of the mesh (mesh_calls.ts).
 *
 * @module
 */
import { compactDecrypt, CompactEncrypt, decodeProtectedHeader } from "jose";
import type { ContainerCall } from "../../../gen/mcm/validators.ts";
import type { LinkLocal } from "../../discovery/link_local.ts";
import { Forbidden, Invalid, Unauthenticated, Unavailable } from "../../errors/mod.ts";
import type { HubLink } from "../../hub_client/hub_link.ts";
import { type Identity, SCOPES } from "../../identity/identity.ts";
import { TokenError } from "../../identity/token_verifier.ts";
import { localLinkListing, mdsNode } from "../../mds/listing.ts";
import { decryptListing } from "../../crypto/listing_crypto.ts";
import type { InferenceService } from "../../inference/inference_service.ts";
import { MlCalls } from "./ml_calls.ts";
import { meshRequest } from "./mesh_calls.ts";

const KID = "edgenode-container";
const CLUSTERS = ["linkLocal", "account", "proximity"] as const;
type Cluster = typeof CLUSTERS[number];

/** The node's side of its containers' calls. */
export class NodeServices {
  readonly #key = crypto.getRandomValues(new Uint8Array(32));
  readonly #identity: Identity;
  readonly #linkLocal: LinkLocal;
  readonly #hub: HubLink | undefined;
  /** Runs `context.ml` calls. */
  readonly #ml: MlCalls;

  /**
   * `inference` runs `context.ml` calls (undefined when inference is off: they are 503);
   * `modelsDir`, the registry's models folder (a real path), lets microservices name a model
   * by its file's path; `storageOf` (a container's storage folder) lets them name their own.
   */
  constructor(
    identity: Identity,
    linkLocal: LinkLocal,
    hub: HubLink | undefined,
    inference?: InferenceService,
    modelsDir?: string,
    storageOf?: (container: string) => string,
  ) {
    this.#identity = identity;
    this.#linkLocal = linkLocal;
    this.#hub = hub;
    this.#ml = new MlCalls(inference, modelsDir, storageOf);
  }

  /**
   * Answers one call of container `container` (of client `client`); a DomainError (its
   * kind, never a status) for what the caller must fix. A `chat` or `embed` is answered with a
   * StreamingAnswer (container_calls.ts). Inference queues and accounts by the container and its client
   * (ml_calls.ts): without them, every container's calls are one caller's.
   */
  async answer(call: ContainerCall, container?: string, client?: string): Promise<unknown> {
    switch (call.op) {
      case "nodes":
        return call.ping ? { id: this.#identity.nodeId } : await this.#listing(call.clusters);
      case "decrypt":
        return await this.#decrypt(call.data ?? "", call.token ?? "");
      case "bep":
        return this.#bep();
      case "chat":
        return await this.#ml.chat(call.request, container, client);
      case "embed":
        return await this.#ml.embed(call.request, container, client);
      case "mesh":
        return meshRequest({
          linkLocal: this.#linkLocal,
          hub: this.#hub && { hub: this.#hub, identity: this.#identity },
        }, call);
    }
  }

  #seal(plaintext: unknown): Promise<string> {
    return new CompactEncrypt(new TextEncoder().encode(JSON.stringify(plaintext)))
      .setProtectedHeader({ alg: "dir", enc: "A256GCM", cty: "json", kid: KID })
      .encrypt(this.#key);
  }

  async #listing(clusters: string | undefined): Promise<string> {
    if (!clusters) throw new Invalid("pass clusters=linkLocal (or ping=true)");
    if (!CLUSTERS.includes(clusters as Cluster)) {
      throw new Invalid(`unknown clusters '${clusters}': use ${CLUSTERS.join(", ")}`);
    }
    if (clusters === "linkLocal") return await this.#seal(localLinkListing(this.#linkLocal));
    if (!this.#hub) {
      throw new Unavailable(
        `clusters=${clusters} needs a hub, and none is configured (hub.url in the node's config)`,
      );
    }
    // Not connected, no token stored: the hub link says why, with its kind (container_calls.ts).
    const listed = await this.#hub.list(clusters as "account");
    const nodes = listed.map((node) => mdsNode(node, []));
    if (clusters === "proximity") return await this.#seal({ proximity: { nodes } });
    // The reference's shape: the nodes are ciphered once more, opened with type "account".
    return await this.#seal({
      account: { accountId: this.#identity.accountId, cipheredNodes: await this.#seal(nodes) },
    });
  }

  async #decrypt(data: string, token: string): Promise<string> {
    if (token === "") {
      throw new Unauthenticated("pass the caller's edge access token as 'token'");
    }
    try {
      await this.#identity.checkAccountToken(token, SCOPES.clusters);
    } catch (error) {
      if (error instanceof TokenError) throw new Forbidden(error.message);
      throw error;
    }
    // The reference's microservices pass the listing's `data` as JSON text (a quoted string).
    let jwe = data.trim();
    try {
      const parsed = JSON.parse(jwe);
      if (typeof parsed === "string") jwe = parsed;
    } catch {
      // Not JSON: the JWE itself.
    }
    let kid: unknown;
    try {
      kid = decodeProtectedHeader(jwe).kid;
    } catch {
      throw new Invalid("data is not an encrypted node listing");
    }
    if (kid === KID) {
      try {
        const { plaintext } = await compactDecrypt(jwe, this.#key);
        return new TextDecoder().decode(plaintext);
      } catch {
        throw new Invalid("data is not a listing of this node, or it was altered");
      }
    }
    for (const clusters of CLUSTERS) {
      try {
        return JSON.stringify(await decryptListing(jwe, token, clusters));
      } catch {
        // Another cluster's key, or another token's.
      }
    }
    throw new Forbidden("this token does not open that listing");
  }

  #bep(): string {
    if (!this.#hub) {
      throw new Unavailable("no BEP: the node has no hub (hub.url in the node's config)");
    }
    const bep = this.#hub.bep();
    if (bep.status !== "success") throw new Unavailable(`no BEP: ${bep.status}`);
    return bep.url;
  }
}
