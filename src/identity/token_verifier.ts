/**
 * Verification of edge access tokens: JWTs from the issuers this node trusts. Each issuer comes
 * with its public keys (inline, from a file, or from a URL that jose fetches and caches).
 *
 * @module
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type JWTPayload,
  jwtVerify,
} from "jose";
import type { TrustedIssuer } from "../../gen/config/validators.ts";
import { DomainError } from "../errors/mod.ts";

/** The only signature algorithms accepted; `none` and HMAC never are. */
export const ALGORITHMS = ["EdDSA", "ES256", "RS256"];
/** Clock difference tolerated on `exp` and `nbf`, in seconds. */
const CLOCK_SKEW_SECONDS = 30;
/**
 * How long a token whose signature verified is taken again without checking it (never past its
 * `exp`): a tunnel client sends the same token with every request, and the signature check was
 * most of the hub's and the node's work per request. Bounded, so that a JWKS URL's key rotation
 * reaches a token that was already seen within this time.
 */
const REUSE_SECONDS = 300;
/** At most this many verified tokens are remembered (the oldest goes first). */
const REMEMBERED_TOKENS = 1024;

/** Why a token was refused, named after the JSON-RPC application errors. */
export type TokenProblem =
  | "InvalidToken"
  | "MissingScope"
  | "WrongNode"
  | "AlreadyAssociated"
  | "WrongAccount";

/** A refused token (or a token that does not fit the node's state); the message says why. */
export class TokenError extends DomainError {
  override name = "TokenError";
  /** A token that is not good enough is a refused credential. */
  readonly kind = "forbidden";
  readonly problem: TokenProblem;

  constructor(problem: TokenProblem, message: string) {
    super(message);
    this.problem = problem;
  }
}

/** What a verified token says. */
export interface VerifiedToken {
  accountId: string;
  /** Expiry, Unix seconds. */
  expiresAt: number;
  scopes: string[];
  claims: JWTPayload;
}

type KeySet = Parameters<typeof jwtVerify>[1];

/**
 * Verifies tokens against the trusted issuers, for one node (a node's own verifier) or for the
 * node named at each call (the hub's).
 */
export class TokenVerifier {
  readonly #nodeId: string | undefined;
  readonly #keys = new Map<string, KeySet>();
  readonly #now: () => number;
  /** Tokens whose signature and issuer verified: their claims, and until when (Unix s). */
  readonly #verified = new Map<string, { claims: JWTPayload; until: number }>();

  private constructor(nodeId: string | undefined, now: () => number) {
    this.#nodeId = nodeId;
    this.#now = now;
  }

  /** A verifier for these issuers; JWKS files are read now, JWKS URLs when first needed. */
  static async create(
    nodeId: string | undefined,
    issuers: TrustedIssuer[],
    options: { now?: () => number } = {},
  ): Promise<TokenVerifier> {
    const verifier = new TokenVerifier(nodeId, options.now ?? (() => Date.now() / 1000));
    for (const trusted of issuers) {
      let keys: KeySet;
      if (trusted.jwksUrl) keys = createRemoteJWKSet(new URL(trusted.jwksUrl));
      else if (trusted.jwksFile) {
        keys = createLocalJWKSet(JSON.parse(await Deno.readTextFile(trusted.jwksFile)));
      } else if (trusted.jwks) keys = createLocalJWKSet(trusted.jwks as { keys: [] });
      else throw new Error(`trusted issuer ${trusted.issuer} has no jwks, jwksFile or jwksUrl`);
      verifier.#keys.set(trusted.issuer, keys);
    }
    return verifier;
  }

  /** The issuers trusted, by their `iss`. */
  get issuers(): string[] {
    return [...this.#keys.keys()];
  }

  /**
   * Verifies `token`, that it has `scope` and that a `node_id` claim names `forNode`; throws
   * TokenError with the reason otherwise.
   */
  async verify(
    token: string,
    scope: string,
    forNode: string | undefined = this.#nodeId,
  ): Promise<VerifiedToken> {
    const now = this.#now();
    const seen = this.#verified.get(token);
    const claims = seen && now < seen.until ? seen.claims : await this.#checkSignature(token, now);
    const scopes = typeof claims.scope === "string" ? claims.scope.split(/\s+/) : [];
    if (!scopes.includes(scope)) {
      throw new TokenError("MissingScope", `the token lacks scope '${scope}'`);
    }
    if (claims.node_id !== undefined && claims.node_id !== forNode) {
      throw new TokenError("WrongNode", `the token is for node '${claims.node_id}', not this one`);
    }
    return { accountId: claims.sub!, expiresAt: claims.exp!, scopes, claims };
  }

  /** The claims of `token` once its algorithm, issuer, signature and times check out. */
  async #checkSignature(token: string, now: number): Promise<JWTPayload> {
    let alg: string | undefined;
    let iss: string | undefined;
    try {
      alg = decodeProtectedHeader(token).alg;
      iss = decodeJwt(token).iss;
    } catch {
      throw new TokenError("InvalidToken", "the token is not a JWT");
    }
    if (!alg || !ALGORITHMS.includes(alg)) {
      throw new TokenError(
        "InvalidToken",
        `algorithm '${alg}' is not accepted; tokens must be signed with ${ALGORITHMS.join(", ")}`,
      );
    }
    const keys = iss === undefined ? undefined : this.#keys.get(iss);
    if (!keys) {
      throw new TokenError("InvalidToken", `issuer '${iss}' is not trusted here`);
    }
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, keys, {
        issuer: iss,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_SKEW_SECONDS,
        requiredClaims: ["sub", "exp"],
        currentDate: new Date(now * 1000),
      }));
    } catch (error) {
      throw new TokenError("InvalidToken", reasonOf(error));
    }
    if (this.#verified.size >= REMEMBERED_TOKENS) {
      this.#verified.delete(this.#verified.keys().next().value!);
    }
    const until = Math.min(claims.exp! + CLOCK_SKEW_SECONDS, now + REUSE_SECONDS);
    this.#verified.set(token, { claims, until });
    return claims;
  }
}

function reasonOf(error: unknown): string {
  if (error instanceof errors.JWTExpired) return "the token has expired";
  if (error instanceof errors.JWTClaimValidationFailed) {
    return error.claim === "nbf"
      ? "the token is not valid yet (nbf)"
      : `the token's '${error.claim}' claim is wrong: ${error.message}`;
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return "the token's signature does not verify";
  }
  if (error instanceof errors.JWKSNoMatchingKey) {
    return "no key of the token's issuer matches it (kid or algorithm)";
  }
  if (error instanceof errors.JOSEError) return `the token is not valid: ${error.message}`;
  throw error;
}
