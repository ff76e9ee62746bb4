import assert from "node:assert/strict";
import { NoMemory, NotFound } from "../errors/mod.ts";
import type { LoadEvent } from "../store/model_loading.ts";
import type { InferenceService } from "./inference_service.ts";
import { modelLoading } from "./load_messages.ts";

/** An inference service that knows model "m" and loads it with the given progress or failure. */
function service(steps: number[], failure?: Error) {
  const calls: string[] = [];
  const fake = {
    check(id: string) {
      calls.push(`check ${id}`);
      if (id !== "m") throw new NotFound(`no model '${id}'`, { resource: "model", id });
      return { id, kind: "llm" };
    },
    load(id: string, onProgress: (progress: number) => void) {
      calls.push(`load ${id}`);
      for (const step of steps) onProgress(step);
      return failure ? Promise.reject(failure) : Promise.resolve({ kind: "llm" });
    },
    unload(id: string) {
      calls.push(`unload ${id}`);
      return Promise.resolve();
    },
  };
  return { calls, loading: modelLoading(fake as unknown as InferenceService) };
}

Deno.test("modelLoading: progress at each whole percent once, then the loaded model", async () => {
  const { loading } = service([0, 0.004, 0.5, 0.505, 1]);
  assert.deepEqual(
    await Array.fromAsync(loading.load("m")),
    [
      { progress: "<|loading_model|> 0%<br />" },
      { progress: "<|loading_model|> 50%<br />" },
      { progress: "<|loading_model|> 100%<br />" },
      { id: "m", object: "model", kind: "llm", loaded: true },
    ] satisfies LoadEvent[],
  );
});

Deno.test("modelLoading: a failed load is the last event, as the error itself", async () => {
  const failure = new NoMemory("not enough memory to load the model");
  const events = await Array.fromAsync(service([0.2], failure).loading.load("m"));
  assert.deepEqual(events.at(-1), { failed: failure });
});

Deno.test("modelLoading: an unknown model is thrown before any stream; unload answers the state", async () => {
  const { calls, loading } = service([]);
  assert.throws(() => loading.load("x"), NotFound);
  assert.deepEqual(await loading.unload("m"), {
    id: "m",
    object: "model",
    kind: "llm",
    loaded: false,
  });
  assert.deepEqual(calls, ["check x", "check m", "unload m"]);
});
