/**
 * Loading and unloading the registry's models in the inference engine, from the models table:
 * which are loaded, a load's progress, and the button that loads or unloads.
 *
 * @module
 */
import { useState } from "preact/hooks";
import { loadModel, type ModelEntry, unloadModel } from "./inference_api.ts";
import { messageOf, storedKey } from "./node_api.ts";
import type { Polled } from "./widgets.tsx";

/**
 * The engine's side of the table: the runnable models, and the loads under way (percent, or the
 * engine's install in words while it installs first).
 */
export interface Engine {
  running: Map<string, ModelEntry>;
  loads: Record<string, number | string>;
  toggle(id: string): void;
}

/** The engine's state over the polled runnable models; failures go to `onProblem`. */
export function useEngine(
  runnable: Polled<ModelEntry[] | null>,
  onProblem: (message: string | undefined) => void,
): Engine {
  const [loads, setLoads] = useState<Record<string, number | string>>({});
  const running = new Map((runnable.data ?? []).map((entry) => [entry.id, entry]));
  const toggle = async (id: string) => {
    const load = !running.get(id)?.loaded;
    onProblem(undefined);
    const progress = (state: number | string) => setLoads((all) => ({ ...all, [id]: state }));
    try {
      if (load) progress(0);
      await (load ? loadModel(id, progress, progress) : unloadModel(id));
    } catch (error) {
      onProblem(messageOf(error));
    }
    setLoads(({ [id]: _, ...others }) => others);
    runnable.reload();
  };
  return { running, loads, toggle };
}

/** Whether the engine has model `id` loaded ("loading 40%" while it loads); "-" if it cannot run it. */
export function loadState(id: string, engine: Engine): string {
  const entry = engine.running.get(id);
  if (!entry) return "-";
  const percent = engine.loads[id];
  if (typeof percent === "string") return percent;
  if (percent !== undefined) return `loading ${percent}%`;
  return entry.loaded ? "yes" : "no";
}

/** Load or Unload, for a model the engine can run. */
export function LoadButton(props: { id: string; engine: Engine }) {
  const entry = props.engine.running.get(props.id);
  if (!entry) return null;
  return (
    <button
      type="button"
      disabled={!storedKey() || props.engine.loads[props.id] !== undefined}
      onClick={() => props.engine.toggle(props.id)}
    >
      {entry.loaded ? "Unload" : "Load"}
    </button>
  );
}
