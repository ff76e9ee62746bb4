import assert from "node:assert/strict";
import dnsPacket from "dns-packet";
import {
  MIN_MULTICAST_INTERVAL_MS,
  MulticastResponder,
  recordKey,
  withoutCacheFlush,
  withoutKnownAnswers,
} from "./mdns_responder.ts";
import { announcementPacket, answersFor, type OwnRecords, SERVICE_TYPE } from "./mdns_records.ts";

const own: OwnRecords = {
  id: "ab".repeat(28),
  name: "unit",
  port: 8083,
  addresses: ["127.0.0.1"],
  txt: { id: "ab".repeat(28), name: "unit", os: "linux", ver: "0.1.0", port: "8083" },
};

const withTtl = (r: dnsPacket.Answer, ttl: number) => ({ ...r, ttl }) as dnsPacket.Answer;
const flushed = (r: dnsPacket.Answer) => (r as { flush?: boolean }).flush === true;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The records as another implementation would send them and dns-packet decode them. */
function overTheWire(records: dnsPacket.Answer[]): dnsPacket.Answer[] {
  const bytes = dnsPacket.encode({ type: "response", id: 0, answers: records });
  return dnsPacket.decode(bytes).answers ?? [];
}

Deno.test("recordKey: same record whatever the TTL, flush bit, name case or TXT encoding", () => {
  const { answers, additionals } = answersFor([{ type: "PTR", name: SERVICE_TYPE }], own, 90);
  const records = [...answers, ...additionals];
  const decoded = overTheWire(
    records.map((r) => ({ ...withTtl(r, 7), flush: false }) as dnsPacket.Answer),
  );
  assert.deepEqual(decoded.map(recordKey), records.map(recordKey));
  const upper = { ...records[0], name: SERVICE_TYPE.toUpperCase() } as dnsPacket.Answer;
  assert.equal(recordKey(upper), recordKey(records[0]));
  assert.equal(new Set(records.map(recordKey)).size, records.length);
});

Deno.test("withoutKnownAnswers: a known answer with at least half the TTL is left out", () => {
  const { answers } = answersFor([{ type: "PTR", name: SERVICE_TYPE }], own, 90);
  const ptr = answers[0];
  assert.deepEqual(withoutKnownAnswers(answers, overTheWire([withTtl(ptr, 45)])), []);
  assert.deepEqual(withoutKnownAnswers(answers, overTheWire([withTtl(ptr, 44)])), answers);
  const other = { ...ptr, data: `other-1234.${SERVICE_TYPE}` } as dnsPacket.Answer;
  assert.deepEqual(withoutKnownAnswers(answers, [other]), answers);
  assert.deepEqual(withoutKnownAnswers(answers, undefined), answers);
});

Deno.test("withoutCacheFlush: no record keeps the top bit of its class", () => {
  const records = announcementPacket(own, 10).answers!;
  assert.ok(records.some(flushed));
  const plain = withoutCacheFlush(records);
  assert.ok(
    overTheWire(plain).every((r) => !flushed(r) && (r as { class?: string }).class === "IN"),
  );
  assert.ok(records.some(flushed), "the records given are left as they were");
});

/** A responder that records when it sent what. */
function recording() {
  const sends: { at: number; answers: dnsPacket.Answer[]; additionals: dnsPacket.Answer[] }[] = [];
  const responder = new MulticastResponder({
    send: (answers, additionals) => sends.push({ at: Date.now(), answers, additionals }),
  });
  const { answers, additionals } = answersFor([{ type: "PTR", name: SERVICE_TYPE }], own, 90);
  const bundles = [{ answer: answers[0], additionals }];
  return { sends, responder, bundles };
}

Deno.test("MulticastResponder: a burst of queries gets one answer now and one a second later", async () => {
  const { sends, responder, bundles } = recording();
  try {
    const start = Date.now();
    for (let i = 0; i < 10; i++) {
      responder.queue(bundles, 20);
      await sleep(30);
    }
    await sleep(MIN_MULTICAST_INTERVAL_MS + 200 - (Date.now() - start));
    assert.equal(sends.length, 2);
    assert.deepEqual(sends[0].answers, [bundles[0].answer]);
    assert.deepEqual(sends[0].additionals, bundles[0].additionals);
    assert.ok(sends[1].at - sends[0].at >= MIN_MULTICAST_INTERVAL_MS - 5);
    assert.equal(responder.waiting, 0);
  } finally {
    responder.close();
  }
});

Deno.test("MulticastResponder: an announcement counts as sent and answers what waits", async () => {
  const { sends, responder, bundles } = recording();
  try {
    responder.queue(bundles, 50);
    // The node announces everything before the answer goes: the querier heard it.
    responder.sent(announcementPacket(own, 90).answers!);
    assert.equal(responder.waiting, 0);
    // A query now waits for the end of the announcement's second, and is not dropped.
    responder.queue(bundles, 20);
    await sleep(300);
    assert.equal(sends.length, 0);
    await sleep(MIN_MULTICAST_INTERVAL_MS);
    assert.equal(sends.length, 1);
  } finally {
    responder.close();
  }
});

Deno.test("MulticastResponder: a probe is answered within 250 ms of the last multicast", async () => {
  const { sends, responder } = recording();
  const srv = announcementPacket(own, 90).answers!.find((r) => r.type === "SRV")!;
  try {
    responder.sent([srv]);
    responder.queue([{ answer: srv, additionals: [] }], 0, true);
    await sleep(400);
    assert.equal(sends.length, 1);
  } finally {
    responder.close();
  }
});
