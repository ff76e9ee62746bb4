/**
 * Ed25519 key pairs as JWKs, secret files written so that a crash never leaves half of one and
 * an existing one is never replaced, and read with errors that name the file.
 *
 * @module
 */
import { exportJWK, generateKeyPair, importJWK, type JWK } from "jose";
import { unreadable, warnIfReadableByOthers } from "../config/file_errors.ts";

/** A new Ed25519 key pair, both halves as JWKs. */
export async function newEd25519Jwks(): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
  const pair = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  return {
    privateJwk: await exportJWK(pair.privateKey),
    publicJwk: await exportJWK(pair.publicKey),
  };
}

/**
 * Writes `text` to `path` with mode 0600: whole to a temporary file first, then linked into
 * place, which fails with Deno.errors.AlreadyExists when `path` exists (where a rename would
 * silently replace it).
 */
export async function writeSecretFile(path: string, text: string): Promise<void> {
  const temp = `${path}.${crypto.randomUUID()}.partial`;
  await Deno.writeTextFile(temp, text, { createNew: true, mode: 0o600 });
  try {
    await Deno.link(temp, path);
  } finally {
    await Deno.remove(temp);
  }
}

/**
 * The text of the secret file at `path`, or undefined when there is none. A file others may read
 * is warned about; one this user may not read is a ConfigError naming it.
 */
export async function readSecretFile(path: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw unreadable(path, error);
  }
  await warnIfReadableByOthers(path);
  return text;
}

/**
 * The Ed25519 private JWK in `text`, checked as checkPrivateJwk checks it. Throws an Error saying
 * what is wrong, without quoting the file: it is a secret.
 */
export async function parsePrivateJwk(text: string): Promise<JWK> {
  if (text.trim() === "") throw new Error("the file is empty");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error("the file is not JSON");
  }
  return await checkPrivateJwk(value);
}

/**
 * `value` as an Ed25519 private JWK, checked: the right kind of key, and halves that belong
 * together (a changed public half would change the node id; a changed private half, every
 * signature). Throws an Error saying which, without quoting the key.
 */
export async function checkPrivateJwk(value: unknown): Promise<JWK> {
  const jwk = value as JWK;
  if (
    typeof jwk !== "object" || jwk === null || jwk.kty !== "OKP" || jwk.crv !== "Ed25519" ||
    typeof jwk.x !== "string" || typeof jwk.d !== "string"
  ) {
    throw new Error("it holds no Ed25519 private key");
  }
  const { d: _private, ...publicJwk } = jwk;
  let matches: boolean;
  try {
    const data = new Uint8Array(32);
    const signature = await crypto.subtle.sign(
      "Ed25519",
      await importJWK(jwk, "EdDSA") as CryptoKey,
      data,
    );
    matches = await crypto.subtle.verify(
      "Ed25519",
      await importJWK(publicJwk, "EdDSA") as CryptoKey,
      signature,
      data,
    );
  } catch {
    throw new Error("it holds no usable Ed25519 key");
  }
  if (!matches) throw new Error("its public and private halves do not match");
  return jwk;
}
