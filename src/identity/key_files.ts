/**
 * Ed25519 key pairs as JWKs, and secret files written so that a crash never leaves half of one
 * and an existing one is never replaced.
 *
 * @module
 */
import { exportJWK, generateKeyPair, type JWK } from "jose";

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
