/**
 * The key the hubs of one cluster share (spec/hub.yaml, "Hub clusters"). Everything a hub puts in
 * NATS, and every request it forwards to another hub, carries an HMAC-SHA256 made with it; a hub
 * ignores what does not. So credentials for NATS alone (a leaked password, a compromised subject)
 * let nobody route one account's callers to another's nodes.
 *
 * @module
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** Shortest key accepted, in bytes. */
export const MIN_CLUSTER_KEY_BYTES = 32;
/**
 * Least entropy a key must show, in bits, estimated from its byte frequencies once repetition
 * is taken out. 32 bytes from /dev/urandom show 137 or more (2 million drawn: 150 on average),
 * 64 hex digits about 240; 32 equal bytes show 0, a short pattern repeated no more than itself.
 */
export const MIN_CLUSTER_KEY_BITS = 128;
/** How to make a good key, for the messages that refuse one. */
export const CLUSTER_KEY_ADVICE =
  "make one with 'head -c 32 /dev/urandom > cluster.key; chmod 600 cluster.key' and copy " +
  "it to every hub of the cluster";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A cluster key, able to seal records and sign forwarded requests. */
export class ClusterKey {
  readonly #key: Uint8Array;

  /** Wraps the key's bytes; throws RangeError for a key that clusterKeyWeakness refuses. */
  constructor(key: Uint8Array) {
    const weakness = clusterKeyWeakness(key);
    if (weakness !== undefined) throw new RangeError(`the cluster key ${weakness}`);
    this.#key = key;
  }

  /** The MAC of `text`, base64url. */
  mac(text: string): string {
    return createHmac("sha256", this.#key).update(text).digest("base64url");
  }

  /** Whether `mac` is the MAC of `text`, compared in constant time. */
  verify(text: string, mac: string): boolean {
    const expected = encoder.encode(this.mac(text));
    const given = encoder.encode(mac);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  /**
   * `record` as bytes for the key `name` of `bucket`: `<mac>.<json>`, the MAC binding the bucket
   * and key too, so a valid record cannot be copied under another node's key.
   */
  seal(bucket: string, name: string, record: unknown): Uint8Array {
    const json = JSON.stringify(record);
    return encoder.encode(`${this.mac(`${bucket}\n${name}\n${json}`)}.${json}`);
  }

  /** The record sealed under `bucket`/`name`, or undefined when it was not sealed with this key. */
  open<T>(bucket: string, name: string, bytes: Uint8Array): T | undefined {
    const text = decoder.decode(bytes);
    const dot = text.indexOf(".");
    if (dot < 0) return undefined;
    const json = text.slice(dot + 1);
    if (!this.verify(`${bucket}\n${name}\n${json}`, text.slice(0, dot))) return undefined;
    try {
      return JSON.parse(json) as T;
    } catch {
      return undefined;
    }
  }
}

/**
 * Why `key` is no cluster key (its length, or too little randomness: all bytes equal, a counting
 * sequence, a short pattern repeated, too few distinct byte values), or undefined when it will
 * do. A weak key lets anyone who guesses it sign records and forwarded requests as a hub.
 */
export function clusterKeyWeakness(key: Uint8Array): string | undefined {
  if (key.length < MIN_CLUSTER_KEY_BYTES) {
    return `has ${key.length} bytes; it needs ${MIN_CLUSTER_KEY_BYTES} bytes or more, all random`;
  }
  if (key.every((byte) => byte === key[0])) {
    return `is ${key.length} times the byte 0x${key[0].toString(16).padStart(2, "0")}, not random`;
  }
  const step = (key[1] - key[0]) & 0xff;
  if (key.every((byte, n) => n === 0 || ((byte - key[n - 1]) & 0xff) === step)) {
    return "is a counting sequence of bytes, not random";
  }
  const period = shortestPeriod(key);
  const bits = Math.floor(entropyBits(key.subarray(0, period)));
  if (bits < MIN_CLUSTER_KEY_BITS) {
    const repeated = period < key.length ? ` (a ${period}-byte pattern repeated)` : "";
    return `shows about ${bits} bits of randomness${repeated}, under the ${MIN_CLUSTER_KEY_BITS} ` +
      "a key needs: it is not random bytes";
  }
  return undefined;
}

/** The shortest p such that every byte equals the one p before it (KMP's failure function). */
function shortestPeriod(bytes: Uint8Array): number {
  const border = new Uint32Array(bytes.length);
  let length = 0;
  for (let n = 1; n < bytes.length; n++) {
    while (length > 0 && bytes[n] !== bytes[length]) length = border[length - 1];
    if (bytes[n] === bytes[length]) length++;
    border[n] = length;
  }
  return bytes.length - border[bytes.length - 1];
}

/** The bytes' Shannon entropy by their frequencies, times their number: an upper estimate. */
function entropyBits(bytes: Uint8Array): number {
  const counts = new Uint32Array(256);
  for (const byte of bytes) counts[byte]++;
  let bits = 0;
  for (const count of counts) {
    if (count > 0) bits -= count * Math.log2(count / bytes.length);
  }
  return bits;
}
