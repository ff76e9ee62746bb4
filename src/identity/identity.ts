/**
 * Who this node is and which account owns it: its key and id, its name, its account, position
 * and stored account token. The JSON-RPC interface and the insight service are thin adapters
 * over this.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { type JWK, SignJWT } from "jose";
import type { TrustedIssuer } from "../../gen/config/validators.ts";
import type { NodeDescription } from "../../gen/mds/validators.ts";
import { signProof } from "./node_proof.ts";
import { type NodeRequestClaims, signNodeRequest } from "./node_request.ts";
import { loadNodeKey, type NodeKey } from "./node_key.ts";
import { type GpsFix, NodeState } from "./node_state.ts";
import { TokenError, TokenVerifier, type VerifiedToken } from "./token_verifier.ts";

/** The scopes of the reference implementation that this node checks. */
export const SCOPES = {
  associate: "edge:account:associate",
  unassociate: "edge:account:unassociate",
  clusters: "edge:clusters",
  mcm: "edge:mcm",
} as const;

/** Lifetime of an id token from getEdgeIdToken, in seconds. */
const ID_TOKEN_SECONDS = 300;

/** Where the stored account token stands (the spec's state table). */
export type TokenState = "absent" | "stored" | "expired";

/** What changed in the identity: the account, the stored token or the GPS fix. */
export type IdentityChange = "account" | "token" | "gps";

/**
 * The name of a node whose config names none: the host name and the first four hex digits of its
 * id (`pi3-0fe0`), so that nodes sharing a machine can be told apart, and the same at every start.
 */
export function defaultNodeName(nodeId: string): string {
  let host = "edgenode";
  try {
    host = Deno.hostname() || host;
  } catch {
    // Not allowed to ask: the program's name instead.
  }
  return `${host}-${nodeId.slice(0, 4)}`;
}

/** The node's identity and account. */
export class Identity {
  readonly #listeners: ((change: IdentityChange) => void)[] = [];
  readonly #key: NodeKey;
  readonly #state: NodeState;
  readonly #verifier: TokenVerifier;

  private constructor(
    key: NodeKey,
    state: NodeState,
    verifier: TokenVerifier,
    /** The node's name. */
    readonly name: string,
    /** The edgenode version it runs. */
    readonly version: string,
  ) {
    this.#key = key;
    this.#state = state;
    this.#verifier = verifier;
  }

  /**
   * Loads (creating at first start) the identity kept in `dataDir` and `db`. Without a `name`,
   * the node is named defaultNodeName(its id).
   */
  static async open(
    dataDir: string,
    db: DatabaseSync,
    options: { name?: string; version: string; trustedIssuers: TrustedIssuer[] },
  ): Promise<Identity> {
    const key = await loadNodeKey(dataDir);
    const verifier = await TokenVerifier.create(key.nodeId, options.trustedIssuers);
    const name = options.name ?? defaultNodeName(key.nodeId);
    return new Identity(key, new NodeState(db), verifier, name, options.version);
  }

  /** The node id (see loadNodeKey). */
  get nodeId(): string {
    return this.#key.nodeId;
  }

  /** The associated account, "" when none. */
  get accountId(): string {
    return this.#state.accountId;
  }

  /** The last GPS fix. */
  get gps(): GpsFix | undefined {
    return this.#state.gps;
  }

  /** Calls `listener` after every change of the account, stored token or GPS fix. */
  onChange(listener: (change: IdentityChange) => void): void {
    this.#listeners.push(listener);
  }

  #changed(change: IdentityChange): void {
    for (const listener of this.#listeners) listener(change);
  }

  /** The stored account token while it is valid (state "stored"). */
  get storedToken(): string | undefined {
    return this.tokenState() === "stored" ? this.#state.token!.token : undefined;
  }

  /** When the stored token expires, Unix seconds. */
  get storedTokenExpiry(): number | undefined {
    return this.#state.token?.expiresAt;
  }

  /** The public key of id tokens, as a JWKS. */
  jwks(): { keys: JWK[] } {
    return { keys: [this.#key.publicJwk] };
  }

  /** A short-lived JWT signed by the node that names it and its account. */
  async idToken(): Promise<string> {
    return await new SignJWT({ node_id: this.nodeId, node_name: this.name })
      .setProtectedHeader({ alg: "EdDSA", kid: this.nodeId, typ: "JWT" })
      .setSubject(this.accountId)
      .setIssuer(`edgenode:${this.nodeId}`)
      .setIssuedAt()
      .setExpirationTime(`${ID_TOKEN_SECONDS}s`)
      .setJti(crypto.randomUUID())
      .sign(this.#key.privateKey);
  }

  /** A proof that this node holds its key, over a challenge and its description. */
  proof(challenge: string, node: NodeDescription): Promise<string> {
    return signProof(this.#key.privateKey, this.#key.publicJwk, challenge, node);
  }

  /**
   * The signature of a request this node sends another on its own behalf, to node `to`
   * (header NODE_REQUEST_HEADER, node_request.ts).
   */
  signRequest(claims: Omit<NodeRequestClaims, "from">): Promise<string> {
    return signNodeRequest(this.#key.privateKey, this.#key.publicJwk, {
      ...claims,
      from: this.nodeId,
    });
  }

  /** Associates the node with the token's account; the same account again is a no-op. */
  async associate(token: string): Promise<string> {
    const { accountId } = await this.#verifier.verify(token, SCOPES.associate);
    const current = this.accountId;
    if (current && current !== accountId) {
      throw new TokenError(
        "AlreadyAssociated",
        `the node is associated with account '${current}'; unassociate it first`,
      );
    }
    if (!current) {
      this.#state.setAccount(accountId);
      this.#changed("account");
    }
    return accountId;
  }

  /** Unassociates the node, given a token of its own account; the stored token goes too. */
  async unassociate(token: string): Promise<string> {
    const { accountId } = await this.checkAccountToken(token, SCOPES.unassociate);
    this.#state.setAccount("");
    this.#changed("account");
    return accountId;
  }

  /** Records a GPS fix, given a token of the node's account; RangeError for impossible values. */
  async updateGps(token: string, fix: Omit<GpsFix, "at">): Promise<void> {
    const limits: [keyof typeof fix, number, number][] = [
      ["latitude", -90, 90],
      ["longitude", -180, 180],
      ["bearing", 0, 360],
      ["speed", 0, Number.MAX_VALUE],
    ];
    for (const [field, min, max] of limits) {
      if (!(fix[field] >= min && fix[field] <= max)) {
        throw new RangeError(
          `${field} must be from ${min} to ${max === Number.MAX_VALUE ? "any" : max}`,
        );
      }
    }
    await this.checkAccountToken(token, SCOPES.clusters);
    this.#state.gps = { ...fix, at: Date.now() };
    this.#changed("gps");
  }

  /**
   * Stores the account token (PUT /token), after verifying it: trusted, scope edge:clusters,
   * this node's account. `expiresAt` can only bring the expiry forward. "" clears it.
   */
  async storeToken(token: string, expiresAt?: number): Promise<void> {
    if (token === "") {
      this.#state.setToken(undefined);
      return this.#changed("token");
    }
    const verified = await this.checkAccountToken(token, SCOPES.clusters);
    if (expiresAt !== undefined && expiresAt * 1000 <= Date.now()) {
      throw new TokenError("InvalidToken", "expiresAt is in the past");
    }
    this.#state.setToken({
      token,
      expiresAt: Math.min(expiresAt ?? Infinity, verified.expiresAt),
    });
    this.#changed("token");
  }

  /** Where the stored account token stands now. */
  tokenState(): TokenState {
    const stored = this.#state.token;
    if (!stored) return "absent";
    return stored.expiresAt * 1000 > Date.now() ? "stored" : "expired";
  }

  /**
   * Verifies a token of this node's account with this scope; TokenError otherwise (also when
   * the node has no account).
   */
  async checkAccountToken(token: string, scope: string): Promise<VerifiedToken> {
    const verified = await this.#verifier.verify(token, scope);
    const current = this.accountId;
    if (!current) {
      throw new TokenError(
        "WrongAccount",
        "the node is not associated with an account; associate it first (JSON-RPC associateAccount)",
      );
    }
    if (verified.accountId !== current) {
      throw new TokenError(
        "WrongAccount",
        `the token is for account '${verified.accountId}'; this node belongs to '${current}'`,
      );
    }
    return verified;
  }
}
