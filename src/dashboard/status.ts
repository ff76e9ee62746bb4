/**
 * GET /dashboard/v1/status (spec/dashboard.yaml): the node at a glance, from the services that
 * hold each part.
 *
 * @module
 */
import { statfs } from "node:fs/promises";
import type { Status } from "../../gen/dashboard/validators.ts";
import type { Identity } from "../identity/identity.ts";
import type { Deployments } from "../mcm/deployments.ts";
import type { ModelRegistry } from "../store/registry.ts";
import type { InferenceService } from "../inference/inference_service.ts";

/** Where the status comes from. */
export interface StatusSources {
  identity: Identity;
  registry: ModelRegistry;
  deployments: Deployments;
  dataDir: string;
  startedAt: number;
  /** Running models; undefined when inference is off. */
  inference?: InferenceService;
}

/** The node's status now. */
export async function nodeStatus(sources: StatusSources): Promise<Status> {
  const { identity, registry, deployments } = sources;
  const models = registry.list({});
  const ready = models.filter((model) => model.readyToUse);
  const containers = deployments.list({ client: "", admin: true });
  const disk = await statfs(sources.dataDir).catch(() => undefined);
  return {
    nodeId: identity.nodeId,
    name: identity.name,
    accountId: identity.accountId,
    version: identity.version,
    startedAt: sources.startedAt,
    uptimeSeconds: Math.floor((Date.now() - sources.startedAt) / 1000),
    models: {
      count: models.length,
      ready: ready.length,
      bytes: ready.reduce((sum, model) => sum + (model.totalSize ?? 0), 0),
    },
    disk: {
      freeBytes: disk ? disk.bavail * disk.bsize : 0,
      totalBytes: disk ? disk.blocks * disk.bsize : 0,
    },
    containers: {
      count: containers.length,
      started: containers.filter((container) => container.state === "started").length,
    },
    ...(sources.inference ? { inference: engineHealth(sources.inference) } : {}),
  };
}

/** The engine's backend as the status shows it (the first read starts its detection). */
function engineHealth(inference: InferenceService): NonNullable<Status["inference"]> {
  const { setting, backend, reason, devices, vramTotal, vramFree, error, installing } =
    inference.engineStatus;
  const health = {
    gpu: setting,
    backend: backend as "cpu" | undefined,
    reason,
    devices,
    vramTotalBytes: vramTotal,
    vramFreeBytes: vramFree,
    error,
    installing,
  };
  return Object.fromEntries(
    Object.entries(health).filter(([, value]) => value !== undefined),
  ) as NonNullable<Status["inference"]>;
}
