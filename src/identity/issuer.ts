/**
 * A local token issuer, so that a complete system runs without an outside identity provider:
 * `edgenode issuer init` makes an Ed25519 key and the trust file a node takes with `--trust`;
 * `edgenode token` signs edge access tokens with it.
 *
 * @module
 */
import { calculateJwkThumbprint, importJWK, type JWK, SignJWT } from "jose";
import { ConfigError } from "../config/config_error.ts";
import { checkPrivateJwk, newEd25519Jwks, readSecretFile, writeSecretFile } from "./key_files.ts";

/** The issuer's key file and trust file in its folder. */
export const ISSUER_FILES = { key: "issuer-key.json", trust: "trust.json" } as const;

interface IssuerKey {
  issuer: string;
  privateJwk: JWK;
}

/** Creates an issuer in `dir`; refuses to replace an existing one. Returns the trust file path. */
export async function initIssuer(dir: string, issuer: string): Promise<string> {
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const { privateJwk, publicJwk } = await newEd25519Jwks();
  const kid = await calculateJwkThumbprint(publicJwk);
  const key: IssuerKey = { issuer, privateJwk: { ...privateJwk, kid } };
  try {
    await writeSecretFile(`${dir}/${ISSUER_FILES.key}`, JSON.stringify(key, null, 2) + "\n");
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists) {
      throw new ConfigError(`${dir} already holds an issuer key; use another --dir`);
    }
    throw error;
  }
  const trust = { issuer, jwks: { keys: [{ ...publicJwk, kid, alg: "EdDSA", use: "sig" }] } };
  const trustPath = `${dir}/${ISSUER_FILES.trust}`;
  await Deno.writeTextFile(trustPath, JSON.stringify(trust, null, 2) + "\n");
  return trustPath;
}

/** Seconds in a duration like 90s, 30m, 24h or 7d. */
export function parseTtl(text: string): number {
  const match = /^(\d+)([smhd])$/.exec(text);
  if (!match || Number(match[1]) === 0) {
    throw new ConfigError(`--ttl must be a duration like 30m, 24h or 7d (got '${text}')`);
  }
  return Number(match[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[match[2] as "s"];
}

/** What a token says. */
export interface TokenRequest {
  account: string;
  scope: string;
  ttlSeconds: number;
  nodeId?: string;
}

/** Signs an edge access token with the issuer in `dir`. */
export async function signToken(dir: string, request: TokenRequest): Promise<string> {
  const path = `${dir}/${ISSUER_FILES.key}`;
  const text = await readSecretFile(path);
  if (text === undefined) {
    throw new ConfigError(`no issuer in ${dir}: run 'edgenode issuer init --dir ${dir}' first`);
  }
  let key: IssuerKey;
  try {
    key = JSON.parse(text);
    if (typeof key?.issuer !== "string") throw new Error("it names no issuer");
    key.privateJwk = await checkPrivateJwk(key.privateJwk);
  } catch (error) {
    const reason = error instanceof SyntaxError ? "the file is not JSON" : (error as Error).message;
    throw new ConfigError(
      `${path} is not a valid issuer key (${reason}): restore it from a backup, or make a new ` +
        `issuer in another --dir (nodes must then trust its trust.json)`,
    );
  }
  const claims: Record<string, string> = { scope: request.scope };
  if (request.nodeId) claims.node_id = request.nodeId;
  return await new SignJWT(claims)
    .setProtectedHeader({ alg: "EdDSA", kid: key.privateJwk.kid, typ: "JWT" })
    .setIssuer(key.issuer)
    .setSubject(request.account)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + request.ttlSeconds)
    .setJti(crypto.randomUUID())
    .sign(await importJWK(key.privateJwk, "EdDSA"));
}
