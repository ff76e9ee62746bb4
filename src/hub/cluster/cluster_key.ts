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

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A cluster key, able to seal records and sign forwarded requests. */
export class ClusterKey {
  readonly #key: Uint8Array;

  /** Wraps the key's bytes (at least MIN_CLUSTER_KEY_BYTES). */
  constructor(key: Uint8Array) {
    if (key.length < MIN_CLUSTER_KEY_BYTES) {
      throw new RangeError(`a cluster key needs ${MIN_CLUSTER_KEY_BYTES} bytes or more`);
    }
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
