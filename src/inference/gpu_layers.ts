/**
 * How many of a model's layers the engine puts on the GPU, from the record's
 * `initGpuLayerSize` and the backend the node runs on (engine_backend.ts).
 *
 * @module
 */
import type { Backend } from "./engine_backend.ts";

/** The layers to offload and why (shown in GET /models `info`). */
export interface GpuLayers {
  /** A count, or "auto": node-llama-cpp fits as many as free VRAM allows. */
  layers: number | "auto";
  reason: string;
}

/**
 * The layers to put on the GPU for a record's `initGpuLayerSize` (`requested`): none on the CPU;
 * a number clamped to the model's layers (the reference's 99 and -1 mean all); absent, as many as
 * fit ("auto").
 */
export function gpuLayersFor(
  requested: number | undefined,
  backend: Backend,
  totalLayers: number,
  cpuReason: string,
): GpuLayers {
  if (backend === "cpu") return { layers: 0, reason: `running on the CPU: ${cpuReason}` };
  if (requested === undefined) {
    return { layers: "auto", reason: `no initGpuLayerSize: as many as fit on ${backend}` };
  }
  if (requested < 0 || requested >= totalLayers) {
    return { layers: totalLayers, reason: `all ${totalLayers} layers on ${backend}` };
  }
  if (requested === 0) return { layers: 0, reason: "initGpuLayerSize is 0" };
  return {
    layers: Math.floor(requested),
    reason: `initGpuLayerSize ${requested} of ${totalLayers} layers on ${backend}`,
  };
}
