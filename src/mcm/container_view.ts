/**
 * A container as GET /mcm/v1/containers shows it (spec/mcm.yaml, Container): its record, its
 * runtime's state and incidents (restarts, processes it brought down, quarantine), its use of
 * its process (usage) and of the node's models (inference).
 *
 * @module
 */
import type { Container } from "../../gen/mcm/validators.ts";
import type { CallerUsage } from "../inference/caller_usage.ts";
import type { ContainerRuntime } from "./runtime/container_runtime.ts";
import type { ContainerRecord } from "./mcm_records.ts";

/** What a container's record shows of shared processes and its use of its process. */
function incidents(runtime: ContainerRuntime): Partial<Container> {
  const usage = runtime.usage();
  return {
    ...(runtime.bystanderRestarts > 0 ? { bystanderRestarts: runtime.bystanderRestarts } : {}),
    ...(runtime.processEnds > 0 ? { processEnds: runtime.processEnds } : {}),
    ...(runtime.quarantined ? { quarantined: true } : {}),
    ...(usage
      ? {
        usage: {
          memoryBytes: Math.round(usage.memoryBytes),
          cpuMicros: Math.round(usage.cpuMicros),
          ...(usage.outboundInFlight === undefined
            ? {}
            : { outboundInFlight: Math.round(usage.outboundInFlight) }),
          at: usage.at,
        },
      }
      : {}),
  };
}

/**
 * The API view of a container: `env` as it is served, `runtime` if it runs, and what its
 * `context.ml` calls used (shown once it made one).
 */
export function containerView(
  record: ContainerRecord,
  env: Record<string, string>,
  runtime: ContainerRuntime | undefined,
  inference: CallerUsage | undefined,
): Container {
  const used = inference && (inference.requests > 0 || inference.budgetRefusals > 0)
    ? { inference: { ...inference, engineMs: Math.round(inference.engineMs) } }
    : {};
  return {
    id: record.id,
    name: record.name,
    image: record.imageName,
    imageId: record.imageId,
    env,
    created: record.created,
    state: runtime?.state ?? "stopped",
    restarts: runtime?.restarts ?? 0,
    ...(runtime?.lastError ? { lastError: runtime.lastError } : {}),
    ...(runtime ? incidents(runtime) : {}),
    ...used,
  };
}
