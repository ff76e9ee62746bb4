/**
 * The DNS-SD records a node publishes (PTR, SRV, TXT, A) and the reading of other nodes'
 * announcements out of mDNS responses. The names and TXT keys are in spec/mds.yaml.
 *
 * @module
 */
import type dnsPacket from "dns-packet";
import * as v from "valibot";
import { type MdnsTxt, MdnsTxtSchema } from "../../gen/mds/validators.ts";

/** The DNS-SD service type of edgenode nodes. */
export const SERVICE_TYPE = "_edgenode._tcp.local";
/** The DNS-SD meta-query name that lists service types (RFC 6763 §9). */
export const SERVICES_META = "_services._dns-sd._udp.local";

type Answer = dnsPacket.Answer;

/** The AA flag: mDNS responses are authoritative (RFC 6762 §18.4). */
const AUTHORITATIVE_ANSWER = 1 << 10;

/** What a node publishes about itself. */
export interface OwnRecords {
  id: string;
  name: string;
  port: number;
  /** The addresses of the A records: where the node's HTTP API is reachable. */
  addresses: string[];
  txt: MdnsTxt;
}

/** The instance and host names of a node (labels may not contain dots). */
export function namesOf(own: Pick<OwnRecords, "id" | "name">) {
  // A DNS label of at most 63 bytes: no dots, no control characters.
  const label = [...own.name].map((c) => (c === "." || c < " " ? "-" : c)).join("").slice(0, 40) ||
    "edgenode";
  return {
    instance: `${label}-${own.id.slice(0, 8)}.${SERVICE_TYPE}`,
    host: `edgenode-${own.id.slice(0, 12)}.local`,
  };
}

/** The TXT strings, in a fixed key order (the order is part of the change check). */
export function txtStrings(txt: MdnsTxt): string[] {
  return Object.entries(txt)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${value}`);
}

/**
 * Every record of a node, with this TTL (0 for a goodbye). PTR records are shared; the others
 * are unique to the node, so they carry the cache-flush bit (RFC 6762 §10.2).
 */
export function ownRecords(own: OwnRecords, ttl: number): { ptr: Answer[]; rest: Answer[] } {
  const { instance, host } = namesOf(own);
  return {
    ptr: [{ type: "PTR", name: SERVICE_TYPE, ttl, data: instance }],
    rest: [
      {
        type: "SRV",
        name: instance,
        ttl,
        flush: true,
        data: { port: own.port, target: host, priority: 0, weight: 0 },
      },
      { type: "TXT", name: instance, ttl, flush: true, data: txtStrings(own.txt) },
      ...own.addresses.map((address): Answer => ({
        type: "A",
        name: host,
        ttl,
        flush: true,
        data: address,
      })),
    ],
  };
}

/** A multicast response (id 0, authoritative) carrying these records. */
export function responsePacket(answers: Answer[], additionals: Answer[] = []): dnsPacket.Packet {
  return { type: "response", id: 0, flags: AUTHORITATIVE_ANSWER, answers, additionals };
}

/** An unsolicited announcement of every record of a node (a goodbye with TTL 0). */
export function announcementPacket(own: OwnRecords, ttl: number): dnsPacket.Packet {
  const { ptr, rest } = ownRecords(own, ttl);
  return responsePacket([...ptr, ...rest]);
}

/** The records that answer these questions, or none when they are not about this node. */
export function answersFor(
  questions: dnsPacket.Question[],
  own: OwnRecords,
  ttl: number,
): { answers: Answer[]; additionals: Answer[] } {
  const { instance, host } = namesOf(own);
  const { ptr, rest } = ownRecords(own, ttl);
  const answers: Answer[] = [];
  for (const { name, type } of questions) {
    const lower = name.toLowerCase();
    // dns-packet decodes QTYPE 255 as "ANY", which its types leave out.
    const any = (type as string) === "ANY";
    if (lower === SERVICES_META && (type === "PTR" || any)) {
      answers.push({ type: "PTR", name: SERVICES_META, ttl, data: SERVICE_TYPE });
    } else if (lower === SERVICE_TYPE && (type === "PTR" || any)) {
      answers.push(...ptr);
    } else if (lower === instance.toLowerCase()) {
      answers.push(...rest.filter((r) => r.name === instance && (any || r.type === type)));
    } else if (lower === host.toLowerCase() && (type === "A" || any)) {
      answers.push(...rest.filter((r) => r.type === "A"));
    }
  }
  const unique = [...new Set(answers)];
  const additionals = unique.some((a) => a.type === "PTR" && a.name === SERVICE_TYPE)
    ? rest.filter((r) => !unique.includes(r))
    : [];
  return { answers: unique, additionals };
}

/** A node as an mDNS response describes it: a hint, to be verified over HTTP. */
export interface Announcement {
  id: string;
  port: number;
  /** Seconds the records stay valid; 0 is a goodbye. */
  ttl: number;
  /** The TXT strings as received, to notice a change. */
  txtKey: string;
}

function txtOf(data: unknown): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const item of Array.isArray(data) ? data : []) {
    const text = typeof item === "string" ? item : new TextDecoder().decode(item as Uint8Array);
    const eq = text.indexOf("=");
    if (eq > 0) entries[text.slice(0, eq).toLowerCase()] ??= text.slice(eq + 1);
  }
  return entries;
}

/** The edgenode instances announced in a response (records in answers or additionals). */
export function announcementsIn(packet: dnsPacket.Packet): Announcement[] {
  const records = [...(packet.answers ?? []), ...(packet.additionals ?? [])];
  const found: Announcement[] = [];
  const suffix = `.${SERVICE_TYPE}`;
  for (const srv of records) {
    if (srv.type !== "SRV" || !srv.name.toLowerCase().endsWith(suffix)) continue;
    const txtRecord = records.find((r): r is dnsPacket.TxtAnswer =>
      r.type === "TXT" && r.name === srv.name
    );
    if (!txtRecord) continue;
    const txt = v.safeParse(MdnsTxtSchema, txtOf(txtRecord.data));
    if (!txt.success) continue;
    found.push({
      id: txt.output.id,
      port: srv.data.port,
      ttl: Math.min(srv.ttl ?? 0, txtRecord.ttl ?? 0),
      txtKey: txtStrings(txtOf(txtRecord.data) as MdnsTxt).join("\n"),
    });
  }
  return found;
}
