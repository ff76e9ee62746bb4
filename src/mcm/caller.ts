/**
 * Who calls /mcm/v1 (spec/mcm.yaml, "Credentials and clients"): a holder of the deployment key,
 * who administers every client, or an edge access token with scope edge:mcm, whose client is
 * its `azp` (or `cid`, `client_id`) claim.
 *
 * @module
 */
import { requireBearer, secretsEqual } from "../http/auth.ts";
import { Forbidden, Invalid } from "../errors/mod.ts";
import { type Identity, SCOPES } from "../identity/identity.ts";
import { TokenError } from "../identity/token_verifier.ts";

/** An authorised caller. */
export interface Caller {
  /** The client its images and containers belong to. */
  client: string;
  /** A key holder: sees and changes every client's images and containers. */
  admin: boolean;
  /**
   * When its credential stops being valid (ms since the epoch): an edge access token's `exp`.
   * What outlives the request (a followed log) ends then. A key holder's never does.
   */
  expiresAt?: number;
}

/** The client of a key holder who sends none. */
export const KEY_CLIENT = "api";
const CLIENT_PATTERN = /^[A-Za-z0-9:._-]{1,128}$/;

/** A client id from a token claim, made safe for ids and paths. */
function clientOf(claims: Record<string, unknown>): string {
  const claim = [claims.azp, claims.cid, claims.client_id].find((value) =>
    typeof value === "string" && value !== ""
  ) as string | undefined;
  const raw = claim ?? `account:${claims.sub}`;
  return raw.replace(/[^A-Za-z0-9:._-]/g, "_").slice(0, 128);
}

/** Checks the request's credential; 401 without one, 403 for a wrong one. */
export async function authorizeCaller(
  request: Request,
  deploymentKey: string,
  identity: Identity,
): Promise<Caller> {
  const credential = requireBearer(request, "deployment key or edge access token");
  if (secretsEqual(credential, deploymentKey)) {
    const client = request.headers.get("x-client-id") ?? KEY_CLIENT;
    if (!CLIENT_PATTERN.test(client)) {
      throw new Invalid("x-client-id must be 1 to 128 letters, digits, ':', '.', '_' or '-'");
    }
    return { client, admin: true };
  }
  if (credential.split(".").length !== 3) throw new Forbidden("incorrect deployment key");
  try {
    const verified = await identity.checkAccountToken(credential, SCOPES.mcm);
    const claims = verified.claims as Record<string, unknown>;
    const expiresAt = typeof claims.exp === "number" ? claims.exp * 1000 : undefined;
    return { client: clientOf(claims), admin: false, expiresAt };
  } catch (error) {
    if (error instanceof TokenError) {
      throw new Forbidden(`invalid edge access token: ${error.message}`);
    }
    throw error;
  }
}
