/** A slot's lanes (model_slots.ts): the key holder's reserved sequence, or one shared lane. */
import assert from "node:assert/strict";
import type { LoadedModelInfo } from "./engine_protocol.ts";
import { ModelSlot } from "./model_slots.ts";

function slot(sequences: number): ModelSlot {
  const info = { contextSize: 512, estimatedBytes: 0, sequences } as LoadedModelInfo;
  return new ModelSlot(
    { id: "m", key: "m@0", kind: "llm", info },
    { queueLimit: 4, perClientLimit: 2, idleMs: 0, onIdle: () => {} },
  );
}

/** A job that runs until `release` is called, noting its sequence. */
function held(order: string[], who: string) {
  const { promise, resolve } = Promise.withResolvers<void>();
  return {
    release: () => resolve(),
    job: async (sequence: number) => {
      order.push(`${who}@${sequence}`);
      await promise;
    },
  };
}

const SERVICE = { client: "a", priority: false };
const KEY = { client: "", priority: true };

for (const [sequences, expected] of [[2, ["svc@0", "key@1"]], [1, ["svc@0"]]] as const) {
  Deno.test(`a slot of ${sequences} sequence(s): does the key holder wait for a service?`, async () => {
    const model = slot(sequences);
    const order: string[] = [];
    const service = held(order, "svc");
    const key = held(order, "key");
    const running = model.run(service.job, undefined, SERVICE);
    const asked = model.run(key.job, undefined, KEY);
    await new Promise((resolve) => setTimeout(resolve, 10));
    // With its own sequence the key holder runs at once; sharing one, it waits its turn.
    assert.deepEqual(order, expected);
    assert.equal(model.waiting, sequences === 2 ? 0 : 1);
    service.release();
    key.release();
    await Promise.all([running, asked]);
    assert.equal(order.length, 2);
    // A second microservice job never takes the key holder's sequence.
    const next = held(order, "svc2");
    next.release();
    await model.run(next.job, undefined, SERVICE);
    assert.equal(order.at(-1), "svc2@0");
  });
}
