/**
 * How the node's containers are run (Deployments, deployments.ts): where their processes come
 * from (a process per client or per container, and the warm spares), and a deployment's
 * ContainerRuntime, built from its record, the mcm settings and the node's facts.
 *
 * @module
 */
import type { BundleFiles } from "./images/bundle_files.ts";
import { limitsOf } from "./runtime/container_env.ts";
import { processProfile } from "./runtime/container_process.ts";
import { ContainerRuntime, type RuntimeOptions } from "./runtime/container_runtime.ts";
import type { ContainerRecord } from "./mcm_records.ts";
import { SparePool } from "./runtime/spare_pool.ts";
import { type McmSettings, type NodeFacts, serviceTypeOf } from "./deployment_facts.ts";
import {
  type ContainerPlacement,
  ProcessPerClient,
  ProcessPerContainer,
} from "./runtime/container_placement.ts";

/** Where containers' processes come from: the placement, and the warm spares it takes from. */
export interface ContainerProcesses {
  placement: ContainerPlacement;
  /** Undefined when mcm.spareContainers is 0. */
  spares: SparePool | undefined;
}

/** The placement and the spares of the node's settings (mcm.containerProcess, spareContainers). */
export function containerProcesses(
  files: BundleFiles,
  settings: McmSettings,
  node: NodeFacts,
): ContainerProcesses {
  const perClient = settings.containerProcess === "per-client";
  // What the spares and the placement both need: where the sandbox, bundles and storage are.
  const processes = {
    runtimeDir: files.runtimeDir,
    bundlesDir: files.bundlesDir,
    storageRoot: files.storageRoot,
    // Client processes' workers connect here (runtime/channel_socket.ts).
    channelsDir: files.channelsDir,
    readEnv: node.readEnv,
    log: (message: string) => console.log(`mcm: ${message}`),
  };
  const spares = settings.spareContainers > 0
    ? new SparePool({
      ...processes,
      count: settings.spareContainers,
      // A container's profile with the node's defaults (the channel's profileOf, same inputs).
      profile: () =>
        processProfile(
          settings.memoryMb,
          settings.outboundHosts,
          settings.outboundNetworks,
          node.ownAddresses(),
        ),
      group: perClient,
    })
    : undefined;
  const placement = perClient
    ? new ProcessPerClient({ ...processes, spares })
    : new ProcessPerContainer({ ...processes, spares });
  return { placement, spares };
}

/** The environment a container is served with: its own, and the reference's MCM.* values. */
export function servedEnv(record: ContainerRecord): Record<string, string> {
  return {
    ...record.env,
    "MCM.BASE_API_PATH": record.basePath,
    "MCM.WEBSOCKET_SUPPORT": "false",
  };
}

/** What a deployment's runtime is built of besides its record. */
export interface RuntimeContext {
  files: BundleFiles;
  settings: McmSettings;
  node: NodeFacts;
  placement: ContainerPlacement;
}

/** The runtime of a deployment (not started); `hooks` are told of its quarantine and lines. */
export function containerRuntime(
  record: ContainerRecord,
  { files, settings, node, placement }: RuntimeContext,
  hooks: Pick<RuntimeOptions, "onQuarantine" | "onLogLine">,
): ContainerRuntime {
  const env = servedEnv(record);
  const limits = limitsOf(env, settings.memoryMb, settings.maxOutboundRequests);
  return new ContainerRuntime({
    id: record.id,
    runtimeDir: files.runtimeDir,
    bundlePath: files.bundlePath(record.bundle),
    storageDir: files.storagePath(record.id),
    storageBytes: settings.storageMb * 1024 * 1024,
    memoryMb: limits.memoryMb,
    outboundHosts: settings.outboundHosts,
    host: {
      networks: settings.outboundNetworks,
      nodeAddresses: node.ownAddresses(),
      limits: limits.watchdog,
    },
    onCall: (call) => node.answerCall(record.id, call),
    env,
    info: {
      serviceType: serviceTypeOf(record),
      apiRoot: record.basePath,
      httpPort: String(node.port()),
      accountId: node.accountId(),
      nodeId: node.nodeId(),
    },
    maxBodyBytes: settings.maxRequestBodyBytes,
    deadlineMs: limits.executionMs,
    fetchTimeoutMs: limits.executionMs,
    loadTimeoutMs: settings.loadTimeoutSeconds * 1000,
    client: record.client,
    placement,
    quarantined: record.quarantined,
    ...hooks,
  });
}
