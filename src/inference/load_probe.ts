/**
 * A new model file's first load is tried in a throwaway engine process before the shared one
 * loads it: a file that crashes llama.cpp (in a way the header checks of store/gguf_limits.ts do not
 * foresee) then ends only the probe, never the streams of other models in the shared engine.
 *
 * Measured on the 2-core test machine (testing/tiny_llama.ts's model): an engine process
 * starts and loads in 370-490 ms and holds about 100 MiB while it lives (node-llama-cpp and
 * llama.cpp's library; the model's own memory comes on top, as in the shared engine). So a
 * probe costs a file's first load about 0.4 s plus the model's load time once more (from the
 * page cache), and no memory once it ends; an engine process per model would cost those
 * 100 MiB for each loaded model for as long as it stays loaded.
 *
 * @module
 */
import { type EngineOptions, EngineProcess } from "./engine_process.ts";
import type { LoadSpec } from "./engine_protocol.ts";

/**
 * Loads `spec` in an engine process of its own and ends it. Resolves when the load worked;
 * rejects as the shared engine's load would (507, 400, a failure), or with Unavailable "the
 * inference engine process ended" when the file crashed it.
 */
export async function probeLoad(
  options: Omit<EngineOptions, "onExit">,
  spec: LoadSpec,
): Promise<void> {
  const probe = new EngineProcess({ ...options, onExit: () => {} });
  try {
    await probe.call({ op: "load", spec });
  } finally {
    await probe.stop();
  }
}
