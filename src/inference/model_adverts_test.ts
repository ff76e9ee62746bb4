import assert from "node:assert/strict";
import type { Model } from "../../gen/store/validators.ts";
import { MAX_ADVERTISED_MODELS, modelsAdvertiser } from "./model_adverts.ts";

const SHA = "ab".repeat(32);

function model(id: string, ready: boolean): Model {
  return {
    id,
    version: "1",
    kind: "llm",
    readyToUse: ready,
    createdAt: 1,
    ...(ready ? { totalSize: 1000, sha256: SHA } : {}),
  };
}

/** A registry of `models` whose generation moves when `models` is replaced. */
function fakeRegistry(models: Model[]) {
  const state = { models, generation: 1, lists: 0 };
  return {
    state,
    registry: {
      get generation() {
        return state.generation;
      },
      list: () => {
        state.lists++;
        return state.models;
      },
    },
  };
}

Deno.test("modelsAdvertiser: nothing while the registry is empty", () => {
  const { registry } = fakeRegistry([]);
  const advertise = modelsAdvertiser({ registry, loaded: () => undefined, backend: () => "cpu" });
  assert.deepEqual(advertise(), {});
});

Deno.test("modelsAdvertiser: each model's file, readiness and load state; loaded first", () => {
  const { registry } = fakeRegistry([
    model("pending", false),
    model("disk", true),
    model("hot", true),
  ]);
  const slot = { idleSequences: 1, waiting: 3 };
  const advertise = modelsAdvertiser({
    registry,
    loaded: (id) => id === "hot" ? slot : undefined,
    backend: () => "cpu",
  });
  assert.deepEqual(advertise(), {
    backend: "cpu",
    models: [
      {
        id: "hot",
        kind: "llm",
        sha256: SHA,
        size: 1000,
        ready: true,
        loaded: true,
        freeSlots: 1,
        queued: 3,
      },
      { id: "disk", kind: "llm", sha256: SHA, size: 1000, ready: true, loaded: false },
      { id: "pending", kind: "llm", ready: false, loaded: false },
    ],
  });
  // The live figures are read at each call, the registry only when it changed.
  slot.waiting = 0;
  assert.equal(advertise().models?.[0].queued, 0);
});

Deno.test("modelsAdvertiser: the registry is read again only when it changes", () => {
  const { registry, state } = fakeRegistry([model("a", true)]);
  const advertise = modelsAdvertiser({
    registry,
    loaded: () => undefined,
    backend: () => undefined,
  });
  advertise();
  advertise();
  assert.equal(state.lists, 1);
  state.models = [];
  state.generation++;
  assert.deepEqual(advertise(), {});
  assert.equal(state.lists, 2);
});

Deno.test("modelsAdvertiser: at most 64 models, no backend when inference is off", () => {
  const many = Array.from({ length: 100 }, (_, i) => model(`m${i}`, i === 99));
  const { registry } = fakeRegistry(many);
  const advert = modelsAdvertiser({
    registry,
    loaded: () => undefined,
    backend: () => undefined,
  })();
  assert.equal(advert.models?.length, MAX_ADVERTISED_MODELS);
  assert.equal(advert.models?.[0].id, "m99", "ready before not ready");
  assert.equal(advert.backend, undefined);
});
