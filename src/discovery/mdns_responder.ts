/**
 * When a node multicasts its answers (RFC 6762 §6, §7.1): no record more often than once a
 * second, answers that the querier already knows left out, and answers to queries that arrive
 * close together merged into one response. Without this every query on the LAN made every node
 * multicast, so that a burst of queries came back multiplied by the number of nodes.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type dnsPacket from "dns-packet";

type Answer = dnsPacket.Answer;

/** A record is multicast at most once a second (RFC 6762 §6)... */
export const MIN_MULTICAST_INTERVAL_MS = 1000;
/** ...or, answering a probe, once every 250 ms. */
export const MIN_PROBE_INTERVAL_MS = 250;

/** An answer and the records that go with it (the additionals of a service PTR). */
export interface Bundle {
  answer: Answer;
  additionals: Answer[];
}

/** A record's TTL (OPT pseudo-records have none). */
function ttlOf(record: Answer): number {
  return "ttl" in record ? record.ttl ?? 0 : 0;
}

function text(item: unknown): string {
  return typeof item === "string" ? item : Buffer.from(item as Uint8Array).toString("utf8");
}

/**
 * What makes a record the same record: name (case-insensitive), type and data, not the TTL or
 * the cache-flush bit. Works on records as built here and as decoded from the wire (TXT strings
 * as bytes).
 */
export function recordKey(record: Answer): string {
  const name = record.name.toLowerCase().replace(/\.$/, "");
  let data: string;
  switch (record.type) {
    case "PTR":
    case "CNAME":
      data = String(record.data).toLowerCase().replace(/\.$/, "");
      break;
    case "SRV": {
      const srv = record.data;
      data = [srv.priority ?? 0, srv.weight ?? 0, srv.port, srv.target.toLowerCase()].join(" ");
      break;
    }
    case "TXT": {
      const items = Array.isArray(record.data) ? record.data : [record.data];
      data = JSON.stringify(items.map(text));
      break;
    }
    default:
      data = JSON.stringify((record as { data?: unknown }).data ?? null);
  }
  return `${name} ${record.type} ${data}`;
}

/**
 * Known-answer suppression (RFC 6762 §7.1): the answers that the query does not already list in
 * its answer section with at least half their TTL.
 */
export function withoutKnownAnswers(answers: Answer[], known: Answer[] | undefined): Answer[] {
  if (!known?.length) return answers;
  const knownTtl = new Map<string, number>();
  for (const record of known) {
    const key = recordKey(record);
    knownTtl.set(key, Math.max(knownTtl.get(key) ?? 0, ttlOf(record)));
  }
  return answers.filter((answer) => {
    const ttl = knownTtl.get(recordKey(answer));
    return ttl === undefined || ttl < ttlOf(answer) / 2;
  });
}

/** The same records without the cache-flush bit (legacy unicast answers, RFC 6762 §10.2). */
export function withoutCacheFlush(records: Answer[]): Answer[] {
  return records.map((record) => {
    const copy = { ...record } as Answer & { flush?: boolean };
    delete copy.flush;
    return copy;
  });
}

interface Pending {
  bundle: Bundle;
  /** When it may go, at the earliest. */
  dueAt: number;
  /** Its rate limit: a second, or 250 ms for a probe's answer. */
  intervalMs: number;
}

/** Options of a MulticastResponder. */
export interface ResponderOptions {
  /** Multicasts one response (on every interface). */
  send: (answers: Answer[], additionals: Answer[]) => void;
  /** The clock, in ms (tests). */
  now?: () => number;
}

/**
 * Queues multicast answers and sends them so that no record goes out twice within a second
 * (the node's announcements count as sent). An answer asked for again while it waits is sent
 * once; one sent too recently waits until its second is over rather than being dropped, so that
 * a querier that missed the last multicast (a node that is just starting) still gets it.
 * Whatever a query burst, each record goes out at most twice in its first second (at once and
 * at the end of the second) and once a second after that.
 */
export class MulticastResponder {
  readonly #send: ResponderOptions["send"];
  readonly #now: () => number;
  /** Record key to the time it was last multicast, kept for a second. */
  readonly #sentAt = new Map<string, number>();
  /** Answers waiting, by the answer's record key. */
  readonly #pending = new Map<string, Pending>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = Infinity;

  constructor(options: ResponderOptions) {
    this.#send = options.send;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Queues answers to go after `delayMs` (the random delay of shared answers, §6), but never
   * within the rate limit of any record of their bundle.
   */
  queue(bundles: Bundle[], delayMs: number, probe = false): void {
    const now = this.#now();
    const intervalMs = probe ? MIN_PROBE_INTERVAL_MS : MIN_MULTICAST_INTERVAL_MS;
    for (const bundle of bundles) {
      const key = recordKey(bundle.answer);
      const waiting = this.#pending.get(key);
      if (waiting) {
        // Already on its way; a probe's answer may make it sooner.
        if (intervalMs < waiting.intervalMs) {
          waiting.intervalMs = intervalMs;
          waiting.dueAt = Math.max(now + delayMs, this.#eligibleAt(bundle, intervalMs));
        }
        continue;
      }
      const dueAt = Math.max(now + delayMs, this.#eligibleAt(bundle, intervalMs));
      this.#pending.set(key, { bundle, dueAt, intervalMs });
    }
    this.#arm();
  }

  /**
   * Notes records multicast without the queue (announcements): they count for the rate limit,
   * and queued answers whose records all just went out are dropped (the querier heard them).
   */
  sent(records: Answer[]): void {
    const now = this.#now();
    const keys = new Set(records.map(recordKey));
    for (const key of keys) this.#sentAt.set(key, now);
    for (const [key, pending] of this.#pending) {
      const all = [pending.bundle.answer, ...pending.bundle.additionals];
      if (all.every((record) => keys.has(recordKey(record)))) this.#pending.delete(key);
    }
    this.#prune(now);
    this.#arm();
  }

  /** Drops what waits (the node is stopping). */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
    this.#pending.clear();
  }

  /** Answers waiting (tests). */
  get waiting(): number {
    return this.#pending.size;
  }

  #eligibleAt(bundle: Bundle, intervalMs: number): number {
    let at = -Infinity;
    for (const record of [bundle.answer, ...bundle.additionals]) {
      const sent = this.#sentAt.get(recordKey(record));
      if (sent !== undefined) at = Math.max(at, sent + intervalMs);
    }
    return at;
  }

  #prune(now: number): void {
    for (const [key, at] of this.#sentAt) {
      if (at + MIN_MULTICAST_INTERVAL_MS <= now) this.#sentAt.delete(key);
    }
  }

  #arm(): void {
    let next = Infinity;
    for (const pending of this.#pending.values()) next = Math.min(next, pending.dueAt);
    if (next === this.#timerAt) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = next;
    if (next === Infinity) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = Infinity;
      this.#flush();
    }, Math.max(0, next - this.#now()));
  }

  #flush(): void {
    const now = this.#now();
    const answers = new Map<string, Answer>();
    const additionals = new Map<string, Answer>();
    for (const [key, pending] of this.#pending) {
      if (pending.dueAt > now) continue;
      // Another response may have carried one of its records meanwhile.
      const eligibleAt = this.#eligibleAt(pending.bundle, pending.intervalMs);
      if (eligibleAt > now) {
        pending.dueAt = eligibleAt;
        continue;
      }
      this.#pending.delete(key);
      answers.set(key, pending.bundle.answer);
      for (const record of pending.bundle.additionals) additionals.set(recordKey(record), record);
    }
    for (const key of answers.keys()) additionals.delete(key);
    if (answers.size > 0) {
      const records = [...answers.values(), ...additionals.values()];
      for (const record of records) this.#sentAt.set(recordKey(record), now);
      this.#send([...answers.values()], [...additionals.values()]);
    }
    this.#prune(now);
    this.#arm();
  }
}
